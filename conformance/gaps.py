"""The coordinator machines whose generated conformance suite does not reach 100% yet, and why.

Kept apart from `coverage` (whose source is an input of the generated files): editing this list never makes the
generated files stale. The test run prints a listed machine's shortfall as a known gap instead of failing;
tests/conformance/test_generated.py expects the listed machines to be incomplete (strict xfail), so an entry must be
removed once its suite is complete.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Mapping

#: none today: the ConsumerGroup driver reaches the KIP-848 migration's and the regular expressions' rows (issues 27
#: and 34) since its classic-protocol requests and `consumer_group_classic.CLASSIC_PROGRAMS` (branch cgd)
KNOWN_GAPS: Mapping[str, str] = {}
