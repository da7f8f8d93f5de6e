"""kube's --token-auth-file: bearer tokens from a CSV file name users, their uids and groups."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp.test_utils import make_mocked_request

from kcp_apiserver.apimachinery.request import AUTHENTICATED, UserInfo
from kcp_apiserver.filters.authentication import StaticTokenAuthenticator


async def user_for(authenticator: StaticTokenAuthenticator, token: str) -> UserInfo | None:
    return await authenticator.authenticate(make_mocked_request("GET", "/", headers={
        "Authorization": f"Bearer {token}"}))


async def test_tokens_name_users_with_their_uid_and_groups(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text('t1,alice,1001,"dev,ops"\nt2,bob,1002\n,nobody,0\nt1,alice-again,1003\n')
    authenticator = StaticTokenAuthenticator.from_file(path)
    assert await user_for(authenticator, "t1") == UserInfo("alice-again", uid="1003", groups=(AUTHENTICATED,))
    assert await user_for(authenticator, "t2") == UserInfo("bob", uid="1002", groups=(AUTHENTICATED,))
    assert await user_for(authenticator, "") is None and await user_for(authenticator, "t3") is None
    path.write_text('t1,alice,1001,"dev,ops"\n')
    alice = await user_for(StaticTokenAuthenticator.from_file(path), "t1")
    assert alice is not None and alice.groups == ("dev", "ops", AUTHENTICATED)


def test_a_line_with_fewer_than_three_columns_is_refused_as_kube_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text("t1,alice\n")
    with pytest.raises(ValueError, match=r"must have at least 3 columns \(token, user name, user uid\), found 2"):
        StaticTokenAuthenticator.from_file(path)
