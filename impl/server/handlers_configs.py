"""DescribeConfigs (api key 32), for one node: the settings kcoord applies (`configs.py`), answered per resource as
Kafka's `ConfigHelper.describeConfigs` does.

Owns: the translation and the per-resource checks. A topic: an illegal name is INVALID_TOPIC_EXCEPTION, an unknown one
UNKNOWN_TOPIC_OR_PARTITION. A broker: the empty name asks for the dynamic cluster-wide defaults (kcoord has none: no
entry), this node's id for its settings, another id or a name that is not a number is INVALID_REQUEST with Kafka's
message. `configuration_keys` picks entries by name; synonyms only when asked for; no documentation. Broker loggers,
client-metrics subscriptions and group configs, which Kafka also describes, are INVALID_REQUEST here (README); a
resource type Kafka does not know fails every resource of the request (INVALID_REQUEST with its own message), as
KafkaApis' authorisation step throws for the whole request.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from typing import Any, Final

from kio.static.protocol import ResponsePayload

from ..errors import Errors
from ..partition.manager import topic_name_problem
from .broker import BrokerContext
from .configs import BROKER, TOPIC, ConfigEntry, broker_configs, topic_configs
from .dispatch import Request
from .kio_build import build, code, item_type, response_schema

#: ConfigResource.Type ids Kafka describes and kcoord does not
_NOT_DESCRIBED: Final = {8: "broker logger", 16: "client metrics", 32: "group"}
#: Errors.INVALID_REQUEST's own message: what every resource gets when one has a type Kafka does not know
_MALFORMED: Final = ("This most likely occurs because of a request being malformed by the client library or the "
                     "message was sent to an incompatible broker. See the broker logs for more details.")


class ConfigHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    async def describe_configs(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        result_type = item_type(schema, "results")
        entry_type = item_type(result_type, "configs")
        synonym_type = item_type(entry_type, "synonyms")
        results = []
        known = all(int(r.resource_type) in (TOPIC, BROKER, *_NOT_DESCRIBED) for r in body.resources)
        for resource in body.resources:
            if known:
                error, message, entries = self._describe(int(resource.resource_type), resource.resource_name)
            else:  # KafkaApis' authorisation step throws for the whole request
                error, message, entries = Errors.INVALID_REQUEST, _MALFORMED, []
            if resource.configuration_keys:
                entries = [e for e in entries if e.name in resource.configuration_keys]
            configs = tuple(build(
                entry_type, name=e.name, value=e.value, read_only=False, config_source=int(e.source),
                is_sensitive=False, config_type=int(e.type), documentation=None,
                synonyms=tuple(build(synonym_type, name=n, value=v, source=int(s)) for n, v, s in e.synonyms)
                if body.include_synonyms else ()) for e in entries)
            results.append(build(result_type, error_code=code(error), error_message=message,
                                 resource_type=resource.resource_type, resource_name=resource.resource_name,
                                 configs=configs))
        return build(schema, results=tuple(results))

    def _describe(self, resource_type: int, name: str) -> tuple[str, str, list[ConfigEntry]]:
        """(error, error message, entries) for one resource (Kafka leaves the message empty unless it refuses)."""
        config = self.ctx.cluster.config
        if resource_type == TOPIC:
            problem = topic_name_problem(name)
            if problem is not None:
                return Errors.INVALID_TOPIC_EXCEPTION, problem, []
            if not self.ctx.cluster.topic_exists(name):
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, "", []
            return Errors.NONE, "", topic_configs(config, name)
        if resource_type == BROKER:
            if not name:
                return Errors.NONE, "", []  # the dynamic cluster-wide defaults: kcoord has none
            if not name.lstrip("-").isdigit():
                return Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}", []
            if int(name) != self.ctx.node_id:
                return (Errors.INVALID_REQUEST, f"Unexpected broker id, expected {self.ctx.node_id} or empty string, "
                                                f"but received {name}", [])
            return Errors.NONE, "", broker_configs(config)
        return Errors.INVALID_REQUEST, f"kcoord does not describe {_NOT_DESCRIBED[resource_type]} configs", []
