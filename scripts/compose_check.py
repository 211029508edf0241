"""The compose deployment's checks, run by ``scripts/compose-check`` (which installs podman
and podman-compose first; see it for the options). Standard library only: it runs on the
host's python3, outside the project's venv.

Phases: images (stand-ins when no registry answers, then the project's image from the real
deploy/Dockerfile), up, the six checks, teardown. Every check goes through the published
ports on 127.0.0.1 or the stack's own network, and prints one line that starts with
``check N`` and ``ok`` or ``FAIL``. The last line printed is the summary of figures.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = Path(os.environ.get("RANKDUEL_COMPOSE_CHECK_DIR", "/var/lib/rankduel-compose-check"))
PODMAN_COMPOSE = os.environ.get("PODMAN_COMPOSE", "podman-compose")
PROJECT = "rankduel-check"
LABEL = f"label=io.podman.compose.project={PROJECT}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the published ports: from the environment, else free ones
API_PORT = int(os.environ.get("RANKDUEL_API_PORT") or free_port())
PROM_PORT = int(os.environ.get("PROMETHEUS_PORT") or free_port())
API = f"http://127.0.0.1:{API_PORT}"
PROM = f"http://127.0.0.1:{PROM_PORT}"
#: searches check 2 (and 6) send before judging the experiment
SEARCHES = int(os.environ.get("COMPOSE_CHECK_SEARCHES", "3000"))
#: the upstream images and the stand-in each falls back to
UPSTREAM = {
    "PYTHON_IMAGE": ("docker.io/library/python:3.11-slim", "python"),
    "REDIS_IMAGE": ("docker.io/library/redis:7.2-alpine", "redis"),
    "PROMETHEUS_IMAGE": ("docker.io/prom/prometheus:v2.53.0", "prometheus"),
}
BASE_IMAGE = "localhost/rankduel-standin/debian:bookworm"
RANKDUEL_IMAGE = "localhost/rankduel:compose-check"
CORE = ["redis", "api", "worker", "scheduler", "prometheus"]
CLUSTER_NODES = ["redis-node-1", "redis-node-2", "redis-node-3"]
SECRET_NAMES = ["REDIS_PASSWORD", "RANKDUEL_ADMIN_TOKEN", "RANKDUEL_SECRET_KEY",
                "RANKDUEL_METRICS_TOKEN", "RANKDUEL_FRONTEND_TOKEN", "GRAFANA_ADMIN_PASSWORD"]

phases: dict[str, float] = {}
figures: dict[str, str] = {}
results: dict[int, bool] = {}


def log(msg: str) -> None:
    print(f"compose-check: {msg}", flush=True)


def run(*cmd: str, check: bool = True, capture: bool = False, env: dict | None = None,
        timeout: float | None = None, quiet: bool = False) -> subprocess.CompletedProcess:
    out = subprocess.PIPE if capture or quiet else None
    return subprocess.run(cmd, check=check, stdout=out, stderr=out if quiet else None,
                          text=True, env=env, timeout=timeout)


def podman(*args: str, **kw) -> subprocess.CompletedProcess:
    return run("podman", *args, **kw)


def logs(name: str) -> str:
    """A container's output, standard error included."""
    return subprocess.run(["podman", "logs", name], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False).stdout


# ------------------------------------------------------------------ secrets and env
def compose_env(**extra: str) -> dict[str, str]:
    """The environment podman-compose interpolates the files with."""
    env_file = STATE / "env"
    values = {}
    if env_file.exists():
        values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if line)
    return {**os.environ, **values, **extra}


def make_secrets() -> None:
    """Fresh secrets for this run in STATE/env (mode 600); the metrics token also as the
    file docker-compose.podman.yml mounts."""
    values = {name: secrets.token_urlsafe(32) for name in SECRET_NAMES}
    token_file = STATE / "metrics_token"
    token_file.write_text(values["RANKDUEL_METRICS_TOKEN"])
    token_file.chmod(0o644)  # read by Prometheus's user in its container; STATE is 700
    # sessions the check cuts short (it stops the traffic mid-round) close after 15 s of
    # inactivity, and a SIGKILLed worker's tasks are sent again after 20 s, instead of the
    # defaults' 30 and 1 minutes: the same code paths, so that "drained" comes sooner
    values.update(RANKDUEL_INACTIVITY_S="15", RANKDUEL_CREDIT_RETRY_S="20")
    # a CI machine shared with other jobs stalls Redis commands beyond the default 250 ms,
    # and the API answers 503 then (by design): 2 s, so that a 5xx in check 2 means a
    # defect, not a busy host
    values.update(RANKDUEL_REDIS_TIMEOUT_MS="2000")
    values.update(RANKDUEL_METRICS_TOKEN_FILE=str(token_file), RANKDUEL_API_PORT=str(API_PORT),
                  PROMETHEUS_PORT=str(PROM_PORT), RANKDUEL_IMAGE=RANKDUEL_IMAGE)
    env_file = STATE / "env"
    env_file.touch(mode=0o600)
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def images_env() -> dict[str, str]:
    path = STATE / "images"
    return json.loads(path.read_text()) if path.exists() else {}


def compose(*args: str, profiles: tuple[str, ...] = (), env: dict | None = None,
            **kw) -> subprocess.CompletedProcess:
    cmd = [PODMAN_COMPOSE, "-p", PROJECT, "-f", str(ROOT / "docker-compose.yml"),
           "-f", str(ROOT / "docker-compose.podman.yml")]
    for extra in filter(None, os.environ.get("COMPOSE_CHECK_OVERRIDE", "").split(":")):
        cmd += ["-f", extra]  # a developer's own override, e.g. to try a setting
    for p in profiles:
        cmd += ["--profile", p]
    return run(*cmd, *args, env=compose_env(**images_env(), **(env or {})), **kw)


# ------------------------------------------------------------------ images
def phase(name: str, t0: float) -> None:
    phases[name] = time.monotonic() - t0


#: the one Debian base every stand-in is (mmdebstrap from the machine's Debian mirror):
#: what the three official images hold, so that each stand-in's Containerfile only sets
#: what its official image sets (user, entry point, paths), without a RUN
STANDIN_PACKAGES = ["ca-certificates", "python3", "python3-venv", "redis-server",
                    "redis-tools", "prometheus", "wget"]
STANDIN_HOOKS = [
    # python and pip where the official python image has them
    'chroot "$1" python3 -m venv /usr/local',
    # the official redis and prometheus images' data folders
    'mkdir -p "$1/data" "$1/prometheus" "$1/etc/prometheus"'
    ' && chroot "$1" chown nobody:nogroup /prometheus',
]


def build_base() -> None:
    """The stand-ins' Debian base, unless it is already there: one mmdebstrap run with
    every package, imported as BASE_IMAGE."""
    if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        return
    tar = STATE / "debian-bookworm-standin.tar"
    run("mmdebstrap", "--quiet", "--variant=minbase",
        "--aptopt=APT::Install-Recommends \"false\"",
        f"--include={','.join(STANDIN_PACKAGES)}",
        *(f"--customize-hook={h}" for h in STANDIN_HOOKS), "bookworm", str(tar))
    try:
        podman("import", "-q", "--change", 'CMD ["/bin/bash"]', str(tar), BASE_IMAGE,
               quiet=True)
    finally:
        tar.unlink(missing_ok=True)


def build_images() -> list[str]:
    """Pull each upstream image, or build its stand-in; build the project's image. The
    images this run made, for the teardown."""
    made, chosen, standins = [], {}, []
    for var, (upstream, standin) in UPSTREAM.items():
        if os.environ.get(var):
            chosen[var] = os.environ[var]
            continue
        tag = f"localhost/rankduel-standin/{standin}:latest"
        if podman("image", "exists", upstream, check=False).returncode == 0:
            chosen[var] = upstream
        elif podman("image", "exists", tag, check=False).returncode == 0:
            chosen[var] = tag
        elif podman("pull", "-q", upstream, check=False, quiet=True,
                    timeout=120).returncode == 0:
            chosen[var], made = upstream, [*made, upstream]
        else:
            log(f"{upstream} cannot be pulled: building the stand-in {tag}")
            standins.append((standin, tag))
            chosen[var], made = tag, [*made, tag]
    if standins:
        t0 = time.monotonic()
        base_existed = podman("image", "exists", BASE_IMAGE, check=False).returncode == 0
        build_base()
        if not base_existed:
            made.insert(0, BASE_IMAGE)
            phases["images: base"] = time.monotonic() - t0
        for standin, tag in standins:  # no RUN: a few seconds each
            podman("build", "-q", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", "-f",
                   str(ROOT / f"deploy/podman/{standin}.Containerfile"), "-t", tag,
                   str(ROOT / "deploy/podman"), quiet=True)
    (STATE / "images").write_text(json.dumps(chosen))
    # the host's CA bundle, for pip behind a proxy with its own CA (a build secret: it is
    # not stored in the image)
    t0 = time.monotonic()
    ca = os.environ.get("RANKDUEL_BUILD_CA_CERTS", "/etc/ssl/certs/ca-certificates.crt")
    ca_args = ["--secret", f"id=ca_certs,src={ca}"] if Path(ca).is_file() else []
    podman("build", "-q", "-f", str(ROOT / "deploy/Dockerfile"), "--build-arg",
           f"PYTHON_IMAGE={chosen['PYTHON_IMAGE']}", "--build-arg", "BUILD_PACKAGES=",
           *ca_args, "-t", RANKDUEL_IMAGE,
           str(ROOT), quiet=True)
    phases["images: rankduel"] = time.monotonic() - t0
    return [*made, RANKDUEL_IMAGE]


def image_ids() -> list[str]:
    out = podman("images", "-aq", "--no-trunc", capture=True).stdout.split()
    return [i.removeprefix("sha256:") for i in out]


def image_id(ref: str) -> str:
    return podman("image", "inspect", "--format", "{{.Id}}", ref, check=False,
                  capture=True).stdout.strip().removeprefix("sha256:")


# ------------------------------------------------------------------ containers and health
def containers(service: str | None = None, all_: bool = False) -> list[str]:
    args = ["ps", "--filter", LABEL, "--format", "{{.Names}}"]
    if all_:
        args.insert(1, "-a")
    if service:
        args += ["--filter", f"label=io.podman.compose.service={service}"]
    return podman(*args, capture=True).stdout.split()


class HealthPump(threading.Thread):
    """Runs every container's healthcheck every 3 s: podman schedules them with systemd
    timers, and there is no systemd here."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()

    def run(self) -> None:
        def one(name: str) -> None:
            with suppress(Exception):  # a container going away mid-check, a timeout
                podman("healthcheck", "run", name, check=False, quiet=True, timeout=20)

        # all containers at once: one at a time, a pass takes longer than 3 s when loaded
        with ThreadPoolExecutor(max_workers=8) as pool:
            while not self.stop.wait(3):
                with suppress(Exception):  # podman ps failing mid-teardown
                    list(pool.map(one, containers()))


def health(name: str) -> str:
    out = podman("inspect", "--format", "{{.State.Status}} {{.State.Health.Status}}", name,
                 check=False, capture=True).stdout.split()
    return " ".join(out) or "gone"


def wait_healthy(services: list[str], timeout: float = 240) -> dict[str, str]:
    """Wait until every container of ``services`` is running and healthy; their states."""
    deadline = time.monotonic() + timeout
    while True:
        states = {}
        for s in services:
            names = containers(s, all_=True)
            states.update({n: health(n) for n in names} if names else {s: "missing"})
        if all(v == "running healthy" for v in states.values()):
            return states
        if time.monotonic() > deadline:
            return states
        time.sleep(2)


# ------------------------------------------------------------------ HTTP
def http(url: str, token: str | None = None, timeout: float = 10) -> tuple[int, bytes]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def secret(name: str) -> str:
    return compose_env()[name]


def experiment(exp_id: str, wait: float = 60) -> dict:
    """The experiment's state; an API that does not answer or answers 5xx (Redis
    restarting, a stalled host) is asked again every 2 s for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        code, body = http(f"{API}/experiments/{exp_id}", secret("RANKDUEL_ADMIN_TOKEN"))
        if code == 200:
            return json.loads(body)
        if (code and code < 500) or time.monotonic() > deadline:
            raise RuntimeError(f"GET /experiments/{exp_id}: {code} {body[:200]!r}")
        time.sleep(2)


def api_statuses() -> dict[str, float]:
    """Requests served by the API so far (its /metrics, all workers): by status code, by
    ``endpoint status`` for the 5xx (where one came from when a check fails), and
    ``slow>1s``, those that took longer than a second."""
    _, body = http(f"{API}/metrics", secret("RANKDUEL_METRICS_TOKEN"))
    out: dict[str, float] = {}
    for m in re.finditer(r'^rankduel_http_request_duration_seconds_bucket\{([^}]*)\} (\S+)$',
                         body.decode(), re.M):
        le = re.search(r'le="([^"]*)"', m.group(1))
        if le and le.group(1) in ("1.0", "+Inf"):  # slower than 1 s: +Inf minus 1.0
            key = "slow>1s"
            out[key] = out.get(key, 0) + float(m.group(2)) * (1 if le.group(1) == "+Inf" else -1)
    for m in re.finditer(r'^rankduel_http_requests_total\{([^}]*)\} (\S+)$', body.decode(),
                         re.M):
        status = re.search(r'status="(\d+)"', m.group(1))
        endpoint = re.search(r'endpoint="([^"]*)"', m.group(1))
        if status:
            out[status.group(1)] = out.get(status.group(1), 0) + float(m.group(2))
            if status.group(1).startswith("5") and endpoint:
                key = f"{endpoint.group(1)} {status.group(1)}"
                out[key] = out.get(key, 0) + float(m.group(2))
    return out


def api_errors(limit: int = 8) -> list[str]:
    """The API containers' last error lines (a Redis error, an unhandled exception)."""
    lines = []
    for name in containers("api", all_=True):
        lines += [f"{name}: {line}" for line in logs(name).splitlines()
                  if re.search(r"ERROR|Traceback|Error:", line)]
    return lines[-limit:]


def prom(path: str, **params: str) -> dict:
    code, body = http(f"{PROM}{path}?{urllib.parse.urlencode(params)}")
    data = json.loads(body or b"{}")
    if code != 200 or data.get("status") != "success":
        raise RuntimeError(f"Prometheus {path} {params}: {code} {body[:300]!r}")
    return data["data"]


# ------------------------------------------------------------------ traffic
class Traffic:
    """The demo-traffic container's experiment, read from its log."""

    def __init__(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while True:
            names = containers("demo-traffic", all_=True)
            text = logs(names[0]) if names else ""
            m = re.search(r"experiment (\S+): .* true best (\S+)", text)
            if m:
                self.container, self.exp_id, self.best = names[0], m.group(1), m.group(2)
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"demo-traffic started no experiment: {text[-2000:]}")
            time.sleep(2)

    def wait_searches(self, n: int, timeout: float = 600) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            state = experiment(self.exp_id)
            if state["counters"].get("impressions", 0) >= n or time.monotonic() > deadline:
                return state
            time.sleep(2)

    def errors(self) -> int:
        text = logs(self.container)
        found = re.findall(r"round \d+: .*?(\d+) errors", text)
        return int(found[-1]) if found else 0


def drain(exp_id: str, timeout: float = 150) -> dict:
    """Wait until every impression is credited (the sweep re-credits what a lost task left
    after RANKDUEL_CREDIT_RETRY_S, 60 s by default)."""
    deadline = time.monotonic() + timeout
    while True:
        state = experiment(exp_id)
        c = state["counters"]
        if c.get("credited", 0) >= c.get("impressions", 0) or time.monotonic() > deadline:
            return state
        time.sleep(2)


def w_total(state: dict) -> float:
    return sum(map(sum, state["W"]))


def judge_experiment(label: str, traffic: Traffic, statuses0: dict[str, float]) -> bool:
    """Check 2's assertions on ``traffic``'s experiment, traffic stopped: champion = true
    best, W = decisive once drained, no 5xx and no 429 from the API."""
    state = drain(traffic.exp_id)
    c = state["counters"]
    statuses = api_statuses()
    delta = {k: v - statuses0.get(k, 0) for k, v in statuses.items()}
    n429 = int(delta.get("429", 0))
    n5xx = int(sum(v for k, v in delta.items() if k.isdigit() and k.startswith("5")))
    # the probes and the scrape answer 503 by design when Redis is slow to answer (a
    # stalled host; Prometheus records a failed scrape as up == 0): listed, not counted
    n5xx -= int(sum(v for k, v in delta.items()
                    if k.startswith(("/readyz ", "/healthz ", "/metrics "))))
    W, decisive = w_total(state), c.get("decisive", 0)
    ok_champion = state["champion"] == traffic.best
    ok_w = abs(W - decisive) < 1e-6 and c.get("credited", 0) == c.get("impressions", 0)
    ok = ok_champion and ok_w and n429 == 0 and n5xx == 0
    log(f"check {label} {'ok' if ok else 'FAIL'}: {c.get('impressions', 0)} searches, champion "
        f"{state['champion']} (true best {traffic.best}), W {W:g} = decisive {decisive} "
        f"({c.get('credited', 0)}/{c.get('impressions', 0)} credited), 429: {n429}, 5xx: "
        f"{n5xx}, traffic errors {traffic.errors()}, statuses "
        f"{sorted((k, v) for k, v in delta.items() if v)}")
    if n5xx:
        for line in api_errors():
            log(f"check {label}: API log: {line[:300]}")
    figures[f"searches{label}"] = str(c.get("impressions", 0))
    figures[f"champion{label}"] = f"{state['champion']}{'=' if ok_champion else '!='}best"
    figures[f"W=decisive{label}"] = f"{W:g}{'=' if ok_w else '!='}{decisive}"
    figures[f"429/5xx{label}"] = f"{n429}/{n5xx}"
    return ok


def start_traffic(profiles: tuple[str, ...] = ("demo",), env: dict | None = None) -> Traffic:
    """A fresh demo-traffic container (a new experiment)."""
    for name in containers("demo-traffic", all_=True):
        podman("rm", "-f", name, quiet=True)
    compose("up", "-d", "--no-deps", "demo-traffic", profiles=profiles, env=env, quiet=True)
    return Traffic()


def stop_traffic() -> None:
    for name in containers("demo-traffic"):
        podman("stop", "-t", "5", name, quiet=True)


# ------------------------------------------------------------------ checks
def check1(label: str = "1", services: list[str] = CORE) -> bool:
    states = wait_healthy(services)
    unhealthy = {k: v for k, v in states.items() if v != "running healthy"}
    ready, _ = http(f"{API}/readyz")
    anon, _ = http(f"{API}/metrics")
    auth, _ = http(f"{API}/metrics", secret("RANKDUEL_METRICS_TOKEN"))
    ok = not unhealthy and ready == 200 and anon == 401 and auth == 200
    log(f"check {label} {'ok' if ok else 'FAIL'}: {len(states)} containers healthy"
        f"{'' if not unhealthy else f' except {unhealthy}'}; /readyz {ready}; /metrics "
        f"{anon} without the token, {auth} with it")
    return ok


def check3(traffic: Traffic) -> tuple[bool, Traffic]:
    """Restart redis with the traffic stopped: the state survives; then crediting resumes."""
    token = secret("RANKDUEL_ADMIN_TOKEN")
    _, before_list = http(f"{API}/experiments", token)
    before = experiment(traffic.exp_id)
    t0 = time.monotonic()
    compose("restart", "redis", quiet=True)
    wait_healthy(["redis"], timeout=120)
    deadline = time.monotonic() + 60
    while http(f"{API}/readyz")[0] != 200 and time.monotonic() < deadline:
        time.sleep(1)
    _, after_list = http(f"{API}/experiments", token)
    after = experiment(traffic.exp_id)
    ids = sorted(e["id"] for e in json.loads(before_list)["experiments"]) if before_list else []
    ids2 = sorted(e["id"] for e in json.loads(after_list)["experiments"]) if after_list else []
    survived = (ids == ids2 and bool(ids) and before["W"] == after["W"]
                and before["counters"] == after["counters"])
    # crediting resumes by itself: searches ended after the restart get credited (the
    # script's own, one a second, on the same experiment: no container start in the way)
    credited0 = before["counters"].get("credited", 0)
    credited_at = None
    while time.monotonic() - t0 < 60 + 30:
        status, page = request("GET", f"/search?experiment={traffic.exp_id}&q=q1")
        if status == 200:
            request("POST", f"/impressions/{page['impression_id']}/end",
                    {"token": page["token"]})
        try:
            credited = experiment(traffic.exp_id, wait=0)["counters"].get("credited", 0)
        except RuntimeError:  # the API's Redis connection still coming back
            credited = credited0
        if credited > credited0:
            credited_at = time.monotonic() - t0
            break
        time.sleep(1)
    resumed = credited_at is not None and credited_at <= 60
    traffic2 = start_traffic()  # the traffic checks 4 and 5 run with
    ok = survived and resumed
    log(f"check 3 {'ok' if ok else 'FAIL'}: after restart redis {len(ids2)} experiments "
        f"(before {len(ids)}), W and counters {'identical' if survived else 'CHANGED'}; "
        f"crediting resumed "
        + (f"{credited_at:.0f} s after the restart" if credited_at else "NOT within 90 s"))
    figures["redis-recovery"] = f"{credited_at:.0f}s" if credited_at else "none"
    return ok, traffic2


def check4_kill(traffic: Traffic) -> str:
    traffic.wait_searches(300, timeout=180)
    victim = containers("worker")[0]
    podman("kill", "-s", "KILL", victim, quiet=True)
    log(f"killed {victim} with SIGKILL mid-traffic")
    return victim


def check4_verify(traffic: Traffic, victim: str) -> bool:
    stop_traffic()
    state = drain(traffic.exp_id)
    c = state["counters"]
    W, decisive = w_total(state), c.get("decisive", 0)
    ok = abs(W - decisive) < 1e-6 and c.get("credited", 0) == c.get("impressions", 0)
    log(f"check 4 {'ok' if ok else 'FAIL'}: after SIGKILL of {victim}: "
        f"{c.get('credited', 0)}/{c.get('impressions', 0)} impressions credited, W {W:g} = "
        f"decisive {decisive}")
    figures["kill W=decisive"] = f"{W:g}{'=' if ok else '!='}{decisive}"
    return ok


def dashboard_queries() -> list[tuple[str, str]]:
    out = []
    for path in sorted((ROOT / "deploy/grafana/dashboards").glob("*.json")):
        d = json.loads(path.read_text())
        panels = []
        for p in d.get("panels", []):
            panels += [p, *p.get("panels", [])]
        for p in panels:
            for t in p.get("targets", []):
                out.append((f"{d['uid']}: {p['title']} [{t['refId']}]", t["expr"]))
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") == "query":
                q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
                out.append((f"{d['uid']}: variable {v['name']}", q))
    return out


def alert_rules() -> list[str]:
    """The alert names of deploy/prometheus/alerts.yml (one ``- alert: Name`` line per
    rule; read without yaml, which the host's python3 may lack)."""
    text = (ROOT / "deploy/prometheus/alerts.yml").read_text()
    return re.findall(r"^\s*- alert: (\w+)\s*$", text, re.M)


def request(method: str, path: str, body: dict | None = None,
            token: str | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(f"{API}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}
    except OSError:  # refused, reset or timed out: no answer
        return 0, {}


def faults() -> None:
    """Deliberate failures, on a second experiment, so that the service dashboard's error
    panels have data (as tests/metrics_run.py does): a ranker that refuses connections
    (ranker failures, forfeits, fallbacks) next to one of the demo's rankers."""
    status, exp = request("POST", "/experiments", {
        "name": "compose-check faults", "algorithm": "mergedts", "interleaving": "team_draft",
        "seed": 1, "probe": False,
        "rankers": [{"name": "r00", "url": "http://demo-rankers:8001/rankers/0"},
                    {"name": "down", "url": "http://demo-rankers:9/down", "timeout_ms": 200}]},
        secret("RANKDUEL_ADMIN_TOKEN"))
    if status != 201:
        raise RuntimeError(f"POST /experiments (faults): {status} {exp}")
    for _ in range(30):
        status, page = request("GET", f"/search?experiment={exp['id']}&q=q1")
        if status == 200:
            request("POST", f"/impressions/{page['impression_id']}/end",
                    {"token": page["token"]})


def check5(traffic: Traffic) -> bool:
    """Scale to 3 workers with traffic running: Prometheus finds every replica, every
    dashboard query returns data, and Prometheus lists every alert rule."""
    compose("up", "-d", "--no-deps", "--scale", "worker=3", "worker", quiet=True)
    wait_healthy(["worker"], timeout=180)
    expected = len(containers("worker")) + len(containers("scheduler"))
    deadline = time.monotonic() + 90
    while True:
        targets = prom("/api/v1/targets")["activeTargets"]
        workers = [t for t in targets if t["labels"]["job"] == "rankduel-worker"]
        up = [t for t in targets if t["health"] == "up"]
        if (sum(t["health"] == "up" for t in workers) >= expected and len(up) == len(targets)) \
                or time.monotonic() > deadline:
            break
        time.sleep(3)
    faults()
    traffic.wait_searches(experiment(traffic.exp_id)["counters"]["impressions"] + 300, 120)

    def has_data(q: str) -> bool:
        m = re.fullmatch(r"\s*label_values\((\w+),\s*(\w+)\)\s*", q)
        if m:
            return traffic.exp_id in prom(f"/api/v1/label/{m.group(2)}/values",
                                          **{"match[]": m.group(1)})
        expr = q.replace("$experiment", traffic.exp_id).replace("$__rate_interval", "1m")
        return bool(prom("/api/v1/query", query=expr)["result"])

    # a rate needs two scrapes (every 5 s) of the newest series: the empty ones are asked
    # again until they have data or 90 s have passed
    queries = dashboard_queries()
    pending = list(queries)
    deadline = time.monotonic() + 90
    while True:
        pending = [(where, q) for where, q in pending if not has_data(q)]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(3)
    empty = [f"{where}: {q}" for where, q in pending]
    # Prometheus loaded every alert rule of deploy/prometheus/alerts.yml
    rules = alert_rules()
    loaded = {r["name"] for g in prom("/api/v1/rules")["groups"] for r in g["rules"]}
    unloaded = [name for name in rules if name not in loaded]
    n_workers = sum(t["health"] == "up" for t in workers)
    ok = (n_workers >= expected and len(up) == len(targets) and not empty and bool(rules)
          and not unloaded)
    log(f"check 5 {'ok' if ok else 'FAIL'}: worker=3: {n_workers}/{expected} worker and "
        f"scheduler targets up, {len(up)}/{len(targets)} targets up; "
        f"{len(queries) - len(empty)}/{len(queries)} dashboard queries return data"
        + (f"; empty: {empty}" if empty else "")
        + f"; {len(rules) - len(unloaded)}/{len(rules)} alert rules loaded"
        + (f"; not loaded: {unloaded}" if unloaded else ""))
    figures["targets up"] = f"{len(up)}/{len(targets)}"
    figures["dashboard queries"] = f"{len(queries) - len(empty)}/{len(queries)}"
    figures["alert rules"] = f"{len(rules) - len(unloaded)}/{len(rules)}"
    return ok


def check6() -> bool:
    """The cluster profile: the app on the 3-master Redis Cluster, the redis service the
    broker; checks 1 and 2 again."""
    stop_traffic()
    compose("up", "-d", *CLUSTER_NODES, "redis-cluster-init", profiles=("cluster",),
            quiet=True)
    states = wait_healthy([*CLUSTER_NODES, "redis-cluster-init"], timeout=180)
    if any(v != "running healthy" for v in states.values()):
        log(f"check 6 FAIL: the cluster did not come up: {states}")
        return False
    env = {"RANKDUEL_REDIS_CLUSTER": "1",
           "RANKDUEL_REDIS_HOSTS": ",".join(f"{n}:6379" for n in CLUSTER_NODES)}
    # every replica goes (none may keep crediting into the single Redis), then the app
    # comes back on the cluster
    # (dependents first: podman-compose links them with --requires)
    for service in ("demo-traffic", "prometheus", "api", "worker", "scheduler"):
        for name in containers(service, all_=True):
            podman("rm", "-f", "--depend", "-t", "5", name, check=False, quiet=True)
    left = [n for s in ("api", "worker", "scheduler") for n in containers(s, all_=True)]
    if left:
        raise RuntimeError(f"check 6: could not remove {left}")
    compose("up", "-d", "--no-deps", "api", "worker", "scheduler", "prometheus", env=env,
            quiet=True)
    ok1 = check1("6.1", [*CORE, *CLUSTER_NODES, "redis-cluster-init", "demo-rankers"])
    statuses0 = api_statuses()
    traffic = start_traffic(profiles=("demo", "cluster"), env=env)
    traffic.wait_searches(SEARCHES)
    stop_traffic()
    ok2 = judge_experiment("6.2", traffic, statuses0)
    return ok1 and ok2


# ------------------------------------------------------------------ up / down
def down(made_images: list[str]) -> None:
    """Remove the project's containers, volumes and networks (by label: a compose down
    skips scaled replicas), and the images this run made."""
    # not `compose down`: it stops one container at a time and skips scaled replicas;
    # podman stops them all at once, and --depend removes the ones podman-compose linked
    # with --requires along with what they require
    for _ in range(3):
        names = podman("ps", "-aq", "--filter", LABEL, capture=True).stdout.split()
        if not names:
            break
        podman("stop", "-t", "5", *names, check=False, quiet=True)
        podman("rm", "-f", "--depend", *names, check=False, quiet=True)
    volumes = podman("volume", "ls", "-q", "--filter", LABEL, capture=True).stdout.split()
    if volumes:
        podman("volume", "rm", "-f", *volumes, check=False, quiet=True)
    networks = podman("network", "ls", "-q", "--filter", LABEL, capture=True).stdout.split()
    if networks:
        podman("network", "rm", "-f", *networks, check=False, quiet=True)
    for image in made_images:  # tags first, then the build's intermediate layers (ids)
        podman("rmi", "-f", image, check=False, quiet=True)
    (STATE / "made-images").unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    # a CI timeout's SIGTERM still tears the stack down (the finally below)
    def terminated(*_: object) -> None:
        raise RuntimeError("terminated (SIGTERM)")

    signal.signal(signal.SIGTERM, terminated)
    keep, keep_images = "--keep" in argv, "--keep-images" in argv
    t_start = time.monotonic()
    phases["install"] = float(os.environ.get("COMPOSE_CHECK_INSTALL_S", 0))
    made_file = STATE / "made-images"
    if "--down" in argv:
        made = json.loads(made_file.read_text()) if made_file.exists() else []
        down([] if keep_images else made)
        log("the kept stack is removed")
        return 0
    if containers(all_=True):
        log(f"a {PROJECT} stack is already up: removing it first (scripts/compose-check "
            "--down does only that)")
        down([])
    pump = HealthPump()
    made: list[str] = []
    try:
        t0 = time.monotonic()
        before = set(image_ids())
        made = build_images()
        made += sorted(set(image_ids()) - before - {image_id(m) for m in made})
        made_file.write_text(json.dumps(made))
        phase("images", t0)

        t0 = time.monotonic()
        make_secrets()
        pump.start()
        # in order: podman < 4.6 ignores depends_on's service_healthy
        compose("up", "-d", "redis", quiet=True)
        wait_healthy(["redis"])
        compose("up", "-d", "api", "worker", "scheduler", "prometheus", quiet=True)
        compose("up", "-d", "--no-deps", "demo-rankers", profiles=("demo",), quiet=True)
        wait_healthy([*CORE, "demo-rankers"])
        phase("up", t0)

        t0 = time.monotonic()
        results[1] = check1()
        phase("check1", t0)

        t0 = time.monotonic()
        statuses0 = api_statuses()
        traffic = start_traffic()
        traffic.wait_searches(SEARCHES)
        stop_traffic()
        results[2] = judge_experiment("2", traffic, statuses0)
        phase("check2", t0)

        t0 = time.monotonic()
        results[3], traffic = check3(traffic)
        phase("check3", t0)

        t0 = time.monotonic()
        victim = check4_kill(traffic)
        phase("check4", t0)
        t0 = time.monotonic()
        results[5] = check5(traffic)
        phase("check5", t0)
        t0 = time.monotonic()
        results[4] = check4_verify(traffic, victim)
        phases["check4"] += time.monotonic() - t0

        t0 = time.monotonic()
        results[6] = check6()
        phase("check6", t0)
    except Exception as exc:  # report, tear down, fail
        log(f"FAIL: {type(exc).__name__}: {exc}")
        if isinstance(exc, subprocess.CalledProcessError):  # a quiet command: its output
            for line in f"{exc.stdout or ''}{exc.stderr or ''}".strip().splitlines()[-20:]:
                log(f"  | {line}")
        results.setdefault(0, False)
    finally:
        pump.stop.set()
        t0 = time.monotonic()
        if keep:
            log(f"kept up: the API at {API}, Prometheus at {PROM}; the admin token is "
                f"RANKDUEL_ADMIN_TOKEN in {STATE / 'env'} (root only); remove it all with "
                "scripts/compose-check --down (nothing runs the healthchecks any more)")
        else:
            down([] if keep_images else made)
            phase("down", t0)
    ok = bool(results) and all(results.values()) and all(k in results for k in range(1, 7))
    total = time.monotonic() - t_start + phases["install"]
    times = " ".join(f"{k} {v:.0f}s" for k, v in phases.items())
    checks = " ".join(f"{k}:{'ok' if results.get(k) else 'FAIL'}" for k in range(1, 7))
    figs = ", ".join(f"{k} {v}" for k, v in figures.items())
    print(f"compose-check {'PASS' if ok else 'FAIL'} in {total:.0f}s | checks {checks} | "
          f"{times} | {figs}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
