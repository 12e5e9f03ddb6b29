"""Group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups,
ConsumerGroupHeartbeat and ConsumerGroupDescribe, for one node — translations between kio messages and this node's
`GroupCoordinator` (`impl/group/messages.py`).

Owns: nothing but the translation, and awaiting parked requests: JoinGroup and SyncGroup answers may come only when
the rebalance completes (a timer or another member's request), so the handler awaits the coordinator's
`Completion` (`as_future`); the wire layer keeps the connection's later requests queued meanwhile, as Kafka does.
A node that does not own the group's `__consumer_offsets` partition answers NOT_COORDINATOR (or
COORDINATOR_LOAD_IN_PROGRESS): the coordinator's routing, not this module's. The member's client host is the
peer address in Kafka's `InetAddress.toString` form (`/127.0.0.1`). A ConsumerGroupHeartbeat's
`subscribed_topic_regex` is passed as sent: "" is an empty regular expression (no regex for the member, as Kafka's
`isNotEmpty`, yet it counts as a subscription on a join; librdkafka sends "" with topic names), null is none.
DescribeGroups answers an unknown group with GROUP_ID_NOT_FOUND and its message from v6 on (KIP-1043), and as a
Dead group without an error before.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from kio.static.protocol import ResponsePayload

from ..errors import Errors
from ..group.messages import (
    ConsumerGroupHeartbeatRequest,
    DescribedConsumerGroup,
    DescribedGroup,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    TopicIdPartitions,
)
from .broker import BrokerContext
from .dispatch import Request
from .kio_build import AUTHORIZED_OPERATIONS_OMITTED, build, code, item_type, ms_of, response_schema, timedelta_of_ms

#: the first DescribeGroups version that answers an unknown group with GROUP_ID_NOT_FOUND (KIP-1043)
_DESCRIBE_GROUPS_NOT_FOUND_VERSION = 6


@functools.cache
def _heartbeat_response(api_version: int, error: str) -> ResponsePayload:
    """A Heartbeat answer is only its error (and a zero throttle time): one immutable entity per version and error."""
    return build(response_schema(12, api_version), error_code=code(error))


#: ConsumerGroupHeartbeat answers without an assignment (a steady member's every heartbeat gets the same one), by
#: (version, error, message, member id, member epoch, heartbeat interval); bounded, then started again
_STEADY_ANSWERS: dict[tuple[int, str, str | None, str | None, int, int], ResponsePayload] = {}
_STEADY_ANSWERS_KEPT = 4096


def client_host(request: Request) -> str:
    return f"/{request.connection.client_host}"


#: id(request body) -> (the body, client id, client host, version, its translation): a steady member re-sends the
#: same bytes, which decode to the same immutable body (`codec.decode_request`), so it is translated once
_TRANSLATED: dict[int, tuple[Any, str | None, str, int, ConsumerGroupHeartbeatRequest]] = {}
_TRANSLATED_KEPT = 4096


def _consumer_heartbeat_request(request: Request) -> ConsumerGroupHeartbeatRequest:
    body: Any = request.body
    host = request.connection.client_host
    known = _TRANSLATED.get(id(body))
    if known is not None and known[0] is body and known[1] == request.client_id and known[2] == host \
            and known[3] == request.api_version:
        return known[4]
    owned = None if body.topic_partitions is None else tuple(
        (t.topic_id, tuple(t.partitions)) for t in body.topic_partitions)
    req = ConsumerGroupHeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id, rebalance_timeout_ms=ms_of(body.rebalance_timeout),
        subscribed_topic_names=None if body.subscribed_topic_names is None else tuple(body.subscribed_topic_names),
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None), server_assignor=body.server_assignor,
        topic_partitions=owned, client_id=request.client_id or "", client_host=client_host(request),
        api_version=request.api_version)
    if len(_TRANSLATED) >= _TRANSLATED_KEPT:
        _TRANSLATED.clear()
    # (the entry holds the body: its id is not reused while the entry lives)
    _TRANSLATED[id(body)] = (body, request.client_id, host, request.api_version, req)
    return req


class GroupHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ classic groups

    async def join_group(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        rebalance_timeout_ms = ms_of(getattr(body, "rebalance_timeout", None))
        req = JoinGroupRequest(
            group_id=body.group_id, member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None), protocol_type=body.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata)) for p in body.protocols),
            session_timeout_ms=ms_of(body.session_timeout), rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=request.client_id or "", client_host=client_host(request), api_version=request.api_version,
            reason=getattr(body, "reason", None))
        self.ctx.metrics.count_join(request.api_version)
        r = await self.ctx.wait(self.ctx.node.groups.join_group(req))
        schema = response_schema(request.api_key, request.api_version)
        member_type = item_type(schema, "members")
        members = tuple(build(member_type, member_id=m.member_id, group_instance_id=m.group_instance_id,
                              metadata=m.metadata) for m in r.members)
        return build(schema, error_code=code(r.error), generation_id=r.generation_id, protocol_type=r.protocol_type,
                     protocol_name=r.protocol_name if request.api_version >= 7 else (r.protocol_name or ""),
                     leader=r.leader, skip_assignment=r.skip_assignment, member_id=r.member_id, members=members)

    async def sync_group(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        req = SyncGroupRequest(
            group_id=body.group_id, member_id=body.member_id, generation_id=body.generation_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=getattr(body, "protocol_type", None), protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple((a.member_id, bytes(a.assignment)) for a in body.assignments),
            api_version=request.api_version)
        r = await self.ctx.wait(self.ctx.node.groups.sync_group(req))
        return build(response_schema(request.api_key, request.api_version), error_code=code(r.error),
                     protocol_type=r.protocol_type, protocol_name=r.protocol_name, assignment=r.assignment)

    async def heartbeat(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        req = HeartbeatRequest(body.group_id, body.member_id, body.generation_id,
                               getattr(body, "group_instance_id", None))
        r = await self.ctx.wait(self.ctx.node.groups.heartbeat(req))
        self.ctx.metrics.count_heartbeat("classic", r.error)
        return _heartbeat_response(request.api_version, r.error)

    async def leave_group(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        batched = request.api_version >= 3
        if batched:
            members = tuple(MemberIdentity(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                            for m in body.members)
        else:
            members = (MemberIdentity(body.member_id),)
        r = await self.ctx.wait(self.ctx.node.groups.leave_group(LeaveGroupRequest(body.group_id, members)))
        schema = response_schema(request.api_key, request.api_version)
        if not batched:
            # v0-2 carry one member and one error: the member's, unless the whole request failed
            errors = [e for _, e in r.members if e != Errors.NONE]
            error = r.error if r.error != Errors.NONE or not errors else errors[0]
            return build(schema, error_code=code(error))
        member_type = item_type(schema, "members")
        return build(schema, error_code=code(r.error), members=tuple(
            build(member_type, member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=code(e))
            for m, e in r.members))

    # ------------------------------------------------------------------ admin

    async def describe_groups(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        described = self.ctx.node.groups.describe_groups(list(body.groups))
        schema = response_schema(request.api_key, request.api_version)
        group_type = item_type(schema, "groups")
        member_type = item_type(group_type, "members")
        if request.api_version < _DESCRIBE_GROUPS_NOT_FOUND_VERSION:  # before KIP-1043: a Dead group, no error
            described = [DescribedGroup(g.group_id, Errors.NONE) if g.error == Errors.GROUP_ID_NOT_FOUND else g
                         for g in described]
        groups = tuple(build(
            group_type, error_code=code(g.error), error_message=g.message, group_id=g.group_id, group_state=g.state,
            protocol_type=g.protocol_type, protocol_data=g.protocol,
            members=tuple(build(member_type, member_id=m.member_id, group_instance_id=m.group_instance_id,
                                client_id=m.client_id, client_host=m.client_host, member_metadata=m.metadata,
                                member_assignment=m.assignment) for m in g.members),
            authorized_operations=AUTHORIZED_OPERATIONS_OMITTED) for g in described)
        return build(schema, groups=groups)

    async def list_groups(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        listed = self.ctx.node.groups.list_groups(tuple(getattr(body, "states_filter", ())),
                                                  tuple(getattr(body, "types_filter", ())))
        schema = response_schema(request.api_key, request.api_version)
        group_type = item_type(schema, "groups")
        return build(schema, error_code=code(Errors.NONE), groups=tuple(
            build(group_type, group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                  group_type=g.group_type) for g in listed))

    async def delete_groups(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        results = await self.ctx.wait(self.ctx.node.groups.delete_groups(list(body.groups_names)))
        schema = response_schema(request.api_key, request.api_version)
        result_type = item_type(schema, "results")
        return build(schema, results=tuple(build(result_type, group_id=g, error_code=code(e)) for g, e in results))

    # ------------------------------------------------------------------ KIP-848

    async def consumer_group_heartbeat(self, request: Request) -> ResponsePayload:
        r = await self.ctx.wait(self.ctx.node.groups.consumer_group_heartbeat(_consumer_heartbeat_request(request)))
        self.ctx.metrics.count_heartbeat("consumer", r.error)
        steady = None
        if r.assignment is None:
            steady = (request.api_version, r.error, r.error_message, r.member_id, r.member_epoch,
                      r.heartbeat_interval_ms)
            answer = _STEADY_ANSWERS.get(steady)
            if answer is not None:
                return answer
        schema = response_schema(request.api_key, request.api_version)
        assignment = None
        if r.assignment is not None:
            assignment_type = item_type(schema, "assignment")
            tp_type = item_type(assignment_type, "topic_partitions")
            assignment = build(assignment_type, topic_partitions=tuple(
                build(tp_type, topic_id=topic_id, partitions=parts) for topic_id, parts in r.assignment))
        answer = build(schema, error_code=code(r.error), error_message=r.error_message, member_id=r.member_id,
                       member_epoch=r.member_epoch, heartbeat_interval=timedelta_of_ms(r.heartbeat_interval_ms),
                       assignment=assignment)
        if steady is not None:
            if len(_STEADY_ANSWERS) >= _STEADY_ANSWERS_KEPT:
                _STEADY_ANSWERS.clear()
            _STEADY_ANSWERS[steady] = answer
        return answer

    async def consumer_group_describe(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        described = self.ctx.node.groups.consumer_group_describe(list(body.group_ids))
        schema = response_schema(request.api_key, request.api_version)
        group_type = item_type(schema, "groups")
        return build(schema, groups=tuple(self._described(group_type, g) for g in described))

    def _described(self, group_type: type[Any], g: DescribedConsumerGroup) -> Any:
        member_type = item_type(group_type, "members")
        assignment_type = item_type(member_type, "assignment")
        members = tuple(build(
            member_type, member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            # Kafka 4.0 describes a member that subscribed without a regex with an empty string, not null
            subscribed_topic_names=m.subscribed_topic_names, subscribed_topic_regex=m.subscribed_topic_regex or "",
            assignment=self._assignment(assignment_type, m.assignment),
            target_assignment=self._assignment(assignment_type, m.target_assignment)) for m in g.members)
        return build(group_type, error_code=code(g.error), error_message=g.message, group_id=g.group_id,
                     group_state=g.state, group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
                     assignor_name=g.assignor, members=members, authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)

    def _assignment(self, assignment_type: type[Any], assigned: TopicIdPartitions) -> Any:
        tp_type = item_type(assignment_type, "topic_partitions")
        return build(assignment_type, topic_partitions=tuple(
            build(tp_type, topic_id=topic_id, topic_name=self._topic_name(topic_id), partitions=parts)
            for topic_id, parts in assigned))

    def _topic_name(self, topic_id: uuid.UUID) -> str:
        return self.ctx.shared.topic_name(topic_id) or ""
