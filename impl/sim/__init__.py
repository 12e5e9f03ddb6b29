"""The deterministic simulator (`kcoord simulate`): simulated clients, faults and seeded bugs driving the real
coordinators on a manual clock, writing traces for the checkers.

Modules: `config` (SimConfig, FAULTS), `scheduler` (the discrete-event queue), `world` (what clients share, the
client base), `producers` / `consumers` (the clients), `faults` (the injector, the faulty marker network),
`simulation` (set-up, the loop, the summary).
Must not import: `kcoord.model`, `kcoord.conformance`.
"""

from .config import FAULTS, SimConfig, parse_faults
from .simulation import Simulation, Summary, default_cluster_config, simulate

__all__ = ["FAULTS", "SimConfig", "Simulation", "Summary", "default_cluster_config", "parse_faults", "simulate"]
