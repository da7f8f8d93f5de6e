"""Two kcp-apiserver replicas against one etcd: both serve, one runs the controllers, and the
other takes them over when the leader goes away (kill -9 included)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import aiohttp
import pytest
from test_crds import CRD_PATH, served, wait_established, widget_crd
from test_process_lifecycle import ExternalEtcd

from api import Api
from kcp_process import KcpServer, free_port


def leading(server: KcpServer) -> bool:
    lines = (server.root / "apiserver.log").read_text().splitlines()
    events = [json.loads(line).get("event") for line in lines if line.startswith("{")]
    return "leading" in events and events[::-1].index("leading") < (
        events[::-1].index("leadership lost") if "leadership lost" in events else len(events))


@pytest.mark.timeout(180)
async def test_controllers_move_to_the_other_replica_when_the_leader_dies(tmp_path: Path) -> None:
    etcd = ExternalEtcd(tmp_path / "etcd")
    etcd.start()
    args = ["--etcd-servers", f"http://127.0.0.1:{etcd.port}", "--compaction-interval", "0"]
    first = KcpServer(tmp_path / "a", free_port(), args)
    second = KcpServer(tmp_path / "b", free_port(), args)
    try:
        first.start()
        second.start()
        (leader, standby) = (first, second) if leading(first) else (second, first)
        assert leading(leader) and not leading(standby)
        async with aiohttp.ClientSession() as session:
            via_standby = Api(standby, session)
            # the standby serves, and the leader's CRD controller establishes what the standby stored
            reply = await via_standby.post(f"/clusters/one{CRD_PATH}", widget_crd("one.example.com"))
            assert reply.status == 201, reply.body
            await wait_established(via_standby, "/clusters/one", "widgets.one.example.com", timeout=15)
            await served(via_standby, "/clusters/one/apis/one.example.com/v1/namespaces/default/widgets", 15)

            assert leader.process is not None
            leader.process.send_signal(signal.SIGKILL)  # no release: the standby waits out the lease
            leader.process.wait(10)
            reply = await via_standby.post(f"/clusters/two{CRD_PATH}", widget_crd("two.example.com"))
            assert reply.status == 201, reply.body
            await wait_established(via_standby, "/clusters/two", "widgets.two.example.com", timeout=40)
            assert leading(standby)
    finally:
        for server in (first, second):
            if server.process is not None and server.process.poll() is None:
                server.stop()
        etcd.stop()
