"""The inspector's guard, attacked step by step over real HTTP on 127.0.0.1 (issue 25,
"Security"): no token, a foreign Host (DNS rebinding), a foreign Origin, a cross-site
POST, a change without the CSRF token, launching on a read-only server, a file outside
the run, and the launch forms' values turned into an argv list, never a shell string."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from web_helpers import Server, lab_output

from pytest_sabot.history import list_runs
from pytest_sabot.lab.scenario_load import resolve_scenario
from pytest_sabot.web.launch import (
    LaunchRefused,
    lab_argv,
    scenario_choices,
    wave_argv,
    wave_choices,
)


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output root holding one lab run, indexed in its history."""
    return lab_output(tmp_path_factory.mktemp("guarded") / "reports",
                      {"lab-naive": "builtin:naive"})


@pytest.fixture(scope="module")
def server(lab_root: Path) -> Iterator[Server]:
    with Server(lab_root, project=lab_root.parent) as running:
        yield running


@pytest.fixture(scope="module")
def run_id(lab_root: Path) -> str:
    return list_runs(lab_root / "history.sqlite")[0].run_id


def _launched(root: Path) -> list[Path]:
    return sorted(root.glob("serve-*"))


def test_serve_refuses_a_request_without_the_token(server: Server, run_id: str) -> None:
    with server.client(signed_in=False) as anonymous:
        for path in ("/", f"/run/{run_id}", f"/run/{run_id}/export?format=json", "/launch"):
            answer = anonymous.get(path)
            assert answer.status_code == 401, path
            assert "access token" in answer.text
            assert run_id not in answer.text
        wrong = anonymous.get("/", params={"token": server.config.token[:-1] + "x"})
        assert wrong.status_code == 401
        anonymous.cookies.set(f"sabot_serve_{server.config.port}", "guess")
        assert anonymous.get("/").status_code == 401
        bearer = anonymous.get("/", headers={"Authorization": f"Bearer {server.config.token}"})
        assert bearer.status_code == 200 and run_id in bearer.text


def test_serve_first_visit_sets_a_strict_cookie_and_drops_the_token(server: Server) -> None:
    with server.client(signed_in=False) as browser:
        first = browser.get("/", params={"token": server.config.token, "label": "keyless"})
        assert first.status_code == 303
        assert first.headers["location"] == "/?label=keyless"  # the token left the URL
        cookie = first.headers["set-cookie"]
        assert f"sabot_serve_{server.config.port}={server.config.token}" in cookie
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        after = browser.get("/?label=keyless")
        assert after.status_code == 200
        assert server.config.token not in after.text  # never written into a page


def test_serve_refuses_a_foreign_host_dns_rebinding(server: Server) -> None:
    """A page of evil.example whose name was re-pointed at 127.0.0.1: the browser sends the
    cookie-less request with Host evil.example; even with the cookie it is refused."""
    with server.client() as client:
        for host in ("evil.example", f"evil.example:{server.config.port}",
                     "127.0.0.1:1", f"127.0.0.2:{server.config.port}"):
            answer = client.get("/", headers={"Host": host})
            assert answer.status_code == 403, host
            assert "not this server" in answer.text
        assert client.get("/", headers={"Host": f"localhost:{server.config.port}"}
                          ).status_code == 200


def test_serve_refuses_a_foreign_origin(server: Server, run_id: str) -> None:
    with server.client() as client:
        read = client.get(f"/run/{run_id}/export?format=json",
                          headers={"Origin": "http://evil.example"})
        assert read.status_code == 403 and "another origin" in read.text
        marked = client.get("/", headers={"Sec-Fetch-Site": "cross-site"})
        assert marked.status_code == 403
        own = client.get("/", headers={"Origin": server.base, "Sec-Fetch-Site": "same-origin"})
        assert own.status_code == 200


def test_serve_refuses_a_cross_site_post(server: Server, lab_root: Path) -> None:
    """The form a foreign page would submit: the cookie rides along (were it not
    SameSite=Strict), but the Origin is foreign and there is no CSRF token."""
    form = {"scenario": "helpdesk/lost-create-response", "agent": "builtin:naive"}
    with server.client() as client:
        foreign = client.post("/launch/lab", data=form, headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403
        no_csrf = client.post("/launch/lab", data=form, headers={"Origin": server.base})
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
        wrong = client.post("/launch/lab", data={**form, "csrf": "0" * 64},
                            headers={"Origin": server.base})
        assert wrong.status_code == 403
        stolen_origin = client.post("/launch/lab", data={**form, "csrf": server.config.csrf},
                                    headers={"Origin": "http://evil.example"})
        assert stolen_origin.status_code == 403
        by_referer = client.post("/launch/lab", data={**form, "csrf": server.config.csrf},
                                 headers={"Referer": "http://evil.example/page"})
        assert by_referer.status_code == 403
        for method in ("PUT", "DELETE", "PATCH"):
            assert client.request(method, "/launch/lab").status_code == 405
    assert _launched(lab_root) == []  # nothing was started


def test_serve_csrf_token_is_not_the_access_token(server: Server) -> None:
    assert server.config.csrf != server.config.token
    with server.client() as client:
        page = client.get("/launch").text
    assert server.config.csrf in page and server.config.token not in page


def test_serve_every_response_keeps_the_page_local(server: Server, run_id: str) -> None:
    with server.client() as client:
        for path in ("/", f"/run/{run_id}", "/nowhere"):
            headers = client.get(path).headers
            policy = headers["content-security-policy"]
            assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
            assert "connect-src 'self'" in policy and "form-action 'self'" in policy
            assert headers["x-frame-options"] == "DENY"
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["referrer-policy"] == "same-origin"
        refused = httpx_get_anonymous(server, "/")
        assert "default-src 'none'" in refused.headers["content-security-policy"]


def httpx_get_anonymous(server: Server, path: str) -> object:
    with server.client(signed_in=False) as client:
        return client.get(path)


def test_serve_file_route_stays_inside_the_run(server: Server, run_id: str) -> None:
    with server.client() as client:
        inside = client.get(f"/run/{run_id}/file/run.json")
        assert inside.status_code == 200 and "agent_view" in inside.text
        for sneaky in ("%2e%2e/history.sqlite", "%2e%2e/%2e%2e/etc/passwd",
                       "..%2f..%2fhistory.sqlite", "/etc/passwd", "%2Fetc%2Fpasswd"):
            answer = client.get(f"/run/{run_id}/file/{sneaky}")
            assert answer.status_code == 404, sneaky
            assert "root:" not in answer.text


def test_serve_read_only_disables_launch(lab_root: Path) -> None:
    with Server(lab_root, project=lab_root.parent, read_only=True) as server, \
            server.client() as client:
        assert client.get("/launch").status_code == 403
        assert 'id="nav-launch"' not in client.get("/").text
        answer = client.post("/launch/lab", headers={"Origin": server.base}, data={
            "csrf": server.config.csrf, "scenario": "helpdesk/lost-create-response",
            "agent": "builtin:naive"})
        assert answer.status_code == 403 and "read-only" in answer.text
    assert _launched(lab_root) == []


def _config(tmp_path: Path, **options: bool) -> object:
    from pytest_sabot.core.paths import standard_root
    from pytest_sabot.web import ServeConfig

    return ServeConfig(root=tmp_path, history=tmp_path / "h.sqlite", standard=standard_root(),
                       project=tmp_path, **options)


def test_serve_launch_is_an_argv_of_registered_values_only(tmp_path: Path) -> None:
    from pytest_sabot.core.paths import standard_root

    config = _config(tmp_path)
    waves = wave_choices(standard_root())
    assert "1" in waves and "langgraph" in waves["1"].frameworks
    out = tmp_path / "out"
    argv = wave_argv({"wave": ["1"], "framework": ["langgraph"], "operator": ["O3", "baseline"],
                      "task": ["T1"], "seed": ["11"]}, waves, config, out)  # type: ignore[arg-type]
    assert argv == [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                    "--sabot-wave=1", "--sabot-framework=langgraph",
                    "--sabot-operator=baseline,O3", "--sabot-task=T1", "--sabot-seed=11",
                    "--sabot-model=sim:realistic", f"--sabot-out={out}"]
    for fields in ({"wave": ["1; rm -rf ~"]}, {"wave": ["../cells/wave1"]},
                   {"wave": ["1"], "framework": ["langgraph --sabot-model=openai:x"]},
                   {"wave": ["1"], "seed": ["11 && curl evil.example"]},
                   {"wave": ["1"], "task": ["T9"]}):
        with pytest.raises(LaunchRefused):
            wave_argv(fields, waves, config, out)  # type: ignore[arg-type]
    scenarios = scenario_choices(tmp_path)
    lab = lab_argv({"scenario": ["helpdesk/lost-create-response"], "agent": ["builtin:naive"]},
                   scenarios, config, out)  # type: ignore[arg-type]
    assert lab == [sys.executable, "-m", "pytest_sabot", "lab", "run",
                   "helpdesk/lost-create-response", "--agent", "builtin:naive", "--out", str(out)]
    for fields in ({"scenario": ["/etc/passwd"]}, {"scenario": ["../../x.yaml"]},
                   {"scenario": ["helpdesk/lost-create-response"], "agent": ["$(id)"]}):
        with pytest.raises(LaunchRefused):
            lab_argv(fields, scenarios, config, out)  # type: ignore[arg-type]


def test_serve_live_model_needs_allow_live(tmp_path: Path) -> None:
    from pytest_sabot.core.paths import standard_root

    waves = wave_choices(standard_root())
    fields = {"wave": ["1"], "model": ["openai:gpt-4o-mini"]}
    with pytest.raises(LaunchRefused) as refused:
        wave_argv(fields, waves, _config(tmp_path), tmp_path / "o")  # type: ignore[arg-type]
    assert refused.value.status == 403 and "--allow-live" in str(refused.value)
    argv = wave_argv(fields, waves, _config(tmp_path, allow_live=True),  # type: ignore[arg-type]
                     tmp_path / "o")
    assert "--sabot-model=openai:gpt-4o-mini" in argv


def test_serve_local_agent_needs_trust_local_agent(tmp_path: Path) -> None:
    scenarios = scenario_choices(tmp_path)
    fields = {"scenario": ["helpdesk/lost-create-response"], "agent": ["mypkg.agent:run"]}
    with pytest.raises(LaunchRefused) as refused:
        lab_argv(fields, scenarios, _config(tmp_path), tmp_path / "o")  # type: ignore[arg-type]
    assert refused.value.status == 403 and "--trust-local-agent" in str(refused.value)
    argv = lab_argv(fields, scenarios, _config(tmp_path, trust_local_agent=True),  # type: ignore[arg-type]
                    tmp_path / "o")
    assert argv[-3:] == ["--out", str(tmp_path / "o"), "--trust-local-agent"]


def test_serve_offers_scenario_files_under_the_root_only_when_they_validate(
    tmp_path: Path,
) -> None:
    (tmp_path / "scenarios").mkdir()
    good = resolve_scenario("lost-create-response")
    (tmp_path / "scenarios" / "mine.yaml").write_text(good.read_text())
    (tmp_path / "scenarios" / "broken.yaml").write_text("name: [unclosed\n")
    scenarios = scenario_choices(tmp_path)
    assert scenarios["scenarios/mine.yaml"].problem is None
    assert scenarios["scenarios/broken.yaml"].problem
    config = _config(tmp_path)
    argv = lab_argv({"scenario": ["scenarios/mine.yaml"]}, scenarios, config,  # type: ignore[arg-type]
                    tmp_path / "o")
    assert argv[5] == str((tmp_path / "scenarios" / "mine.yaml").resolve())
    with pytest.raises(LaunchRefused):
        lab_argv({"scenario": ["scenarios/broken.yaml"]}, scenarios, config,  # type: ignore[arg-type]
                 tmp_path / "o")


def _launched_page(launch: object) -> str:
    from pytest_sabot.web.pages import render

    serve = {"root": "/r", "history": "/r/h.sqlite", "project": "/p", "csrf": "c",
             "read_only": False, "allow_live": False, "trust_local_agent": False}
    return render("serve_launched.html.j2", serve=serve, launch=launch)


def test_serve_cancelled_launch_keeps_following_until_its_exit_is_known(tmp_path: Path) -> None:
    """A run cancelled from its page is done at once, but its exit code and history entry
    come later: until they do, the page it is redirected to still follows the run's events,
    so the status line ends with the exit code instead of stopping at "cancelled"."""
    from pytest_sabot.web.launch import Launch

    launch = Launch(id="serve-wave-x", kind="wave", argv=["pytest"], out_dir=tmp_path,
                    started=0.0, status="cancelled")
    assert launch.done and not launch.settled
    page = _launched_page(launch)
    assert 'data-done="false"' in page and 'data-exit=""' in page
    assert '<span class="note">No run recorded' not in page
    assert 'id="cancel-form"' not in page
    launch.exit_code = -15
    assert launch.settled
    page = _launched_page(launch)
    assert 'data-done="true"' in page and 'data-exit="-15"' in page
    assert '<span class="note">No run recorded' in page
