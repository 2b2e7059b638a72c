"""How first apply and no-op apply grow with the fleet: models and MCP servers.

    python bench/scale_bench.py             # 3 rounds, up to 5000 models / 500 servers
    python bench/scale_bench.py --quick     # 1 round, no 5000 models
    python bench/scale_bench.py --compare /tmp/base   # and another checkout, same run
    python bench/scale_bench.py --profile 500         # cProfile one first apply
    python bench/scale_bench.py --cost                # what one more model / server costs

The fleets are the shipped ``fleet.yaml`` with models added to ``models:`` (the servers
axis keeps the example's four models) or servers added to ``mcp_servers:`` (the models
axis keeps its one server). Each round of each size times ``apply --no-verify`` on a fresh
temporary home (first apply: every client file created), then again on the same home
(no-op), then with one MCP server changed (the existing files edited in place). Prints the medians, each first apply over its no-op, and the growth for 10× the
models and 10× the servers (linear is ×10; the goal is ≤ ×11, and a first apply at 500
servers ≤ 20× its no-op). No network: a dummy key, no verify.

``--cost`` answers #24's question instead: what each more model and each more MCP server
adds to a first apply, as a share of a bare ``python -c pass`` timed in the same run —
the slope between two sizes of each axis (default 250 → 500 models, 50 → 100 servers;
goals ≤ 0.02× per model, ≤ 0.1× per server). A linear apply has the same slope at any size.
With ``--callgrind`` it counts instructions instead (``valgrind --tool=callgrind``, one
run each: the count does not move with the load of the machine, as time does). With
``--existing`` each home already holds the user's own TOML files (Codex's, Vibe's and
gptme's ``config.toml``), so the apply edits them with the round-trip editor instead of
writing new ones. With ``--destroy`` (and ``--existing``) it measures ``taosync destroy``
instead of the first apply: each home applied first (not counted) and each of those
files touched by the user after (a comment at the end), so the destroy takes taosync's
tables and ``[[…]]`` elements out one by one with the editor instead of putting the
file back byte for byte::

    python bench/scale_bench.py --cost --callgrind --existing --destroy --models 100 200 --servers 20 40
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from validate_bench import timed  # bench/ is on sys.path when a script here runs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_MODELS = 4  # in the shipped fleet.yaml
MODELS_AXIS = (10, 100, 1000, 5000)
SERVERS_AXIS = (1, 50, 500)
COST_MODELS = (250, 500)
COST_SERVERS = (50, 100)
#: #24's goals: what one more model / MCP server may add to a first apply, in bare starts
GOAL_PER_MODEL = 0.02
GOAL_PER_SERVER = 0.1


def fleet_text(models: int, servers: int) -> str:
    """The shipped fleet.yaml with ``models`` catalogue entries and ``servers`` MCP servers
    in all (the example's own count toward both)."""
    lines = (ROOT / "fleet.yaml").read_text().splitlines()
    out = []
    for line in lines:
        out.append(line)
        if line.startswith("models:"):
            out += [f"  bench/model-{i:05d}: {{backend: cuda, context_window: 32768}}"
                    for i in range(models - EXAMPLE_MODELS)]
        elif line.startswith("mcp_servers:"):
            for i in range(servers - 1):
                if i % 2:
                    out += [f"  bench-http-{i:04d}:",
                            f"    url: https://mcp{i}.example.net/mcp",
                            "    headers: {Authorization: 'Bearer ${gateway.key}'}"]
                else:
                    out += [f"  bench-stdio-{i:04d}:",
                            "    command: npx",
                            f"    args: [-y, '@bench/server-{i}']",
                            "    env: {BASE: '${gateway.base_url}', MODEL: '${routes.fast}'}"]
    return "\n".join(out) + "\n"


def env_for_children() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TAOTOKEN_API_KEY"] = "sk-bench-0000000000000000dummy"
    for var in ("TAOSYNC_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME",
                "CLAUDE_CONFIG_DIR", "CLINE_DIR", "CLINE_DATA_DIR", "CONTINUE_GLOBAL_DIR"):
        env.pop(var, None)
    return env


#: --existing: the user's own files in each home before the first apply (so the TOML
#: clients' files are edited in place, by formats/toml.py, not written new)
USER_FILES = {
    ".codex/config.toml": '# my own settings\n[tui]\nnotifications = true  # keep\n',
    ".vibe/config.toml": '# my own settings\ntheme = "dark"  # keep\n',
    ".config/gptme/config.toml": '# my own settings\n[prompt]\nabout_user = "me"  # keep\n',
}


def seed(home: Path) -> Path:
    """``home`` holding :data:`USER_FILES`."""
    for rel, text in USER_FILES.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    return home


def growth_steps(axis: tuple[int, ...]) -> list[tuple[int, int]]:
    return list(zip(axis, axis[1:]))


def changed(fleet: str) -> str:
    """The fleet with one MCP server changed (the example's, present in every size)."""
    return fleet.replace("TAOTOKEN_MODEL: ${routes.balanced}", "TAOTOKEN_MODEL: ${routes.fast}")


def report(name: str, sizes, models_axis, servers_axis, first, noop, change) -> None:
    """The table and growth ratios of one code tree's medians."""
    med_first = {s: statistics.median(t) for s, t in first.items()}
    med_noop = {s: statistics.median(t) for s, t in noop.items()}
    med_change = {s: statistics.median(t) for s, t in change.items()}
    print(f"{name}:")
    print("| models | MCP servers | first apply | no-op apply | first / no-op "
          "| one server changed |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        f, n, c = med_first[size], med_noop[size], med_change[size]
        print(f"| {size[0]} | {size[1]} | {f * 1000:.0f} ms | {n * 1000:.0f} ms | {f / n:.1f}× "
              f"| {c * 1000:.0f} ms |")
    print("growth (linear = the size factor; goal ≤ ×11 for 10×):")
    steps = [((a, 1), (b, 1)) for a, b in growth_steps(models_axis)]
    steps += [((EXAMPLE_MODELS, a), (EXAMPLE_MODELS, b)) for a, b in growth_steps(servers_axis)]
    for small, big in steps:
        if small[1] == big[1]:
            what = f"models {small[0]} → {big[0]} (×{big[0] // small[0]})"
        else:
            what = f"servers {small[1]} → {big[1]} (×{big[1] // small[1]})"
        print(f"  {what:<28} first apply ×{med_first[big] / med_first[small]:.1f}, "
              f"no-op ×{med_noop[big] / med_noop[small]:.1f}, "
              f"one changed ×{med_change[big] / med_change[small]:.1f}")
    if (EXAMPLE_MODELS, 500) in med_first:
        ratio = med_first[EXAMPLE_MODELS, 500] / med_noop[EXAMPLE_MODELS, 500]
        print(f"  first apply at 500 servers = {ratio:.1f}× its no-op (goal ≤ 20×)")
    print()


def timed_cpu(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU (user + system of the child) moves much less
    than wall time with the load of other jobs on the machine."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(argv, env, cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(instructions, instructions) of one run under callgrind: the ``(wall, CPU)`` pair
    :func:`cost` reads, both the one deterministic count."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          *argv], env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{' '.join(argv)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    count = next(float(line.split()[-1].replace(",", "")) for line in out.stderr.splitlines()
                 if "Collected" in line)
    return count, count


def touch(home: Path) -> None:
    """The user's own edit after taosync's, in each of :data:`USER_FILES`: a destroy can
    no longer put such a file back whole, it gives back taosync's keys one by one."""
    for rel in USER_FILES:
        with open(home / rel, "a") as f:
            f.write("# touched after taosync\n")


def cost(trees: dict, envs: dict, tmp: str, rounds: int, models: tuple[int, int],
         servers: tuple[int, int], measure=timed_cpu, existing: bool = False,
         destroy: bool = False) -> None:
    """Time ``python -c pass`` and a first apply (or a destroy after one: ``destroy``) at
    two sizes of each axis, interleaved; print each tree's cost of one more model and one
    more server in bare starts, by wall time and by CPU time."""
    py = sys.executable
    sizes = [(models[0], 1), (models[1], 1), (EXAMPLE_MODELS, servers[0]),
             (EXAMPLE_MODELS, servers[1])]
    fleets = {}
    for size in sizes:
        fleets[size] = Path(tmp, f"fleet-{size[0]}-{size[1]}.yaml")
        fleets[size].write_text(fleet_text(*size))

    def apply(home: Path, fleet: Path) -> list[str]:
        return [py, "-m", "taosync", "--home", str(home), "-c", str(fleet),
                "apply", "--no-verify", "-q"]

    def destroyed(home: Path, fleet: Path, env: dict, tree: Path) -> list[str]:
        """The destroy of ``home`` once ``fleet`` is applied there and touched (not counted)."""
        timed(apply(home, fleet), env, tree)
        touch(home)
        return [py, "-m", "taosync", "--home", str(home), "-c", str(fleet), "destroy", "--yes", "-q"]

    what_run = "destroy" if destroy else "first apply"
    bare = [py, "-c", "pass"]
    floor: list[tuple[float, float]] = []
    first = {name: {size: [] for size in sizes} for name in trees}
    for t, (name, tree) in enumerate(trees.items()):  # warm-up: bytecode, page cache
        warm = Path(tmp, f"warm-{t}")
        timed(apply(seed(warm) if existing else warm, fleets[sizes[2]]), envs[name], tree)
    for r in range(rounds):
        for size in sizes:  # alternating, so every size, tree and floor sees the same load
            for t, (name, tree) in enumerate(trees.items()):
                floor.append(measure(bare, envs[name], tree))
                home = Path(tmp, f"home-{size[0]}-{size[1]}-{r}-{t}")
                if existing:
                    seed(home)
                argv = (destroyed(home, fleets[size], envs[name], tree) if destroy
                        else apply(home, fleets[size]))
                first[name][size].append(measure(argv, envs[name], tree))
    start = [statistics.median(f[k] for f in floor) for k in (0, 1)]
    counting = measure is instructions
    if counting:
        print(f"python -c pass: {start[0] / 1e6:.1f} M instructions (median of {len(floor)})")
    else:
        print(f"python -c pass: {start[0] * 1000:.1f} ms wall, {start[1] * 1000:.1f} ms CPU "
              f"(medians of {len(floor)})")
    for name in trees:
        print(f"{name}:")
        med = {size: [statistics.median(t[k] for t in times) for k in (0, 1)]
               for size, times in first[name].items()}
        for size in sizes:
            print(f"  {what_run}, {size[0]} models, {size[1]} MCP servers: " + (
                f"{med[size][0] / 1e6:.0f} M instructions" if counting else
                f"{med[size][0] * 1000:.0f} ms wall, {med[size][1] * 1000:.0f} ms CPU"))
        for what, (small, big), more, goal in (
                ("model", sizes[:2], models[1] - models[0], GOAL_PER_MODEL),
                ("MCP server", sizes[2:], servers[1] - servers[0], GOAL_PER_SERVER)):
            if counting:
                slope = (med[big][0] - med[small][0]) / more
                print(f"  one more {what + ':':<11} {slope / 1e6:.2f} M instructions = "
                      f"{slope / start[0]:.3f}× python -c pass (goal ≤ {goal}×)")
                continue
            line = [f"{(med[big][k] - med[small][k]) / more * 1000:.2f} ms = "
                    f"{(med[big][k] - med[small][k]) / more / start[k]:.3f}×"
                    for k in (0, 1)]
            print(f"  one more {what + ':':<11} {line[0]} python -c pass by wall time, "
                  f"{line[1]} by CPU time (goal ≤ {goal}×)")
    print(f"({rounds} round(s), medians, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round, no 5000 models")
    parser.add_argument("--compare", metavar="DIR", type=Path,
                        help="also time the taosync package in DIR (another checkout, e.g. "
                             "`git worktree add /tmp/base main`), interleaved in the same run")
    parser.add_argument("--profile", type=int, metavar="SERVERS",
                        help="instead: cProfile one first apply with this many servers")
    parser.add_argument("--sort", default="cumtime", help="the profile's order (pstats keys)")
    parser.add_argument("--cost", action="store_true",
                        help="instead: the cost of one more model and one more MCP server")
    parser.add_argument("--models", type=int, nargs=2, default=COST_MODELS, metavar="N",
                        help=f"--cost's two catalogue sizes (default {COST_MODELS})")
    parser.add_argument("--servers", type=int, nargs=2, default=COST_SERVERS, metavar="N",
                        help=f"--cost's two MCP server counts (default {COST_SERVERS})")
    parser.add_argument("--callgrind", action="store_true",
                        help="--cost counts instructions under valgrind's callgrind (one run "
                             "each; slow, but the same count on a loaded machine)")
    parser.add_argument("--existing", action="store_true",
                        help="--cost: each home already holds the user's own config.toml "
                             "for Codex, Vibe and gptme (edited in place, not written new)")
    parser.add_argument("--destroy", action="store_true",
                        help="--cost: measure `taosync destroy` of each home after its first "
                             "apply (not counted) and an edit of the user's files")
    args = parser.parse_args()
    py = sys.executable
    trees = {"this checkout": ROOT}
    if args.compare:
        if not (args.compare / "taosync" / "__main__.py").is_file():
            sys.exit(f"{args.compare}: no taosync package there")
        trees[f"{args.compare}"] = args.compare.resolve()
    envs = {}
    for name, tree in trees.items():  # each child imports its own tree's package first
        envs[name] = env_for_children()
        envs[name]["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(tree), os.environ.get("PYTHONPATH")) if p)

    with tempfile.TemporaryDirectory(prefix="taosync-scale-") as tmp:
        def apply(home: Path, fleet: Path) -> list[str]:
            return [py, "-m", "taosync", "--home", str(home), "-c", str(fleet),
                    "apply", "--no-verify", "-q"]

        if args.profile is not None:
            fleet = Path(tmp, "fleet.yaml")
            fleet.write_text(fleet_text(EXAMPLE_MODELS, args.profile))
            argv = apply(Path(tmp, "home"), fleet)[3:]  # in-process: the CLI ends
            script = ("import cProfile, pstats, sys; from taosync.__main__ import main; "
                      "cProfile.run('main(sys.argv[3:])', sys.argv[1]); "
                      "pstats.Stats(sys.argv[1]).sort_stats(sys.argv[2]).print_stats(40)")
            subprocess.run([py, "-c", script, str(Path(tmp, "prof")), args.sort, *argv],
                           env=envs["this checkout"], cwd=ROOT, check=True)
            return 0

        if args.cost:
            cost(trees, envs, tmp, 1 if args.quick or args.callgrind else args.rounds,
                 tuple(args.models), tuple(args.servers),
                 instructions if args.callgrind else timed_cpu, args.existing, args.destroy)
            return 0

        models_axis = MODELS_AXIS[:3] if args.quick else MODELS_AXIS
        servers_axis = SERVERS_AXIS
        rounds = 1 if args.quick else args.rounds
        sizes = [(m, 1) for m in models_axis] + [(EXAMPLE_MODELS, s) for s in servers_axis]
        fleets, changed_fleets = {}, {}
        for models, servers in sizes:
            text = fleet_text(models, servers)
            fleets[models, servers] = Path(tmp, f"fleet-{models}-{servers}.yaml")
            fleets[models, servers].write_text(text)
            changed_fleets[models, servers] = Path(tmp, f"changed-{models}-{servers}.yaml")
            changed_fleets[models, servers].write_text(changed(text))
        first = {name: {size: [] for size in sizes} for name in trees}
        noop = {name: {size: [] for size in sizes} for name in trees}
        change = {name: {size: [] for size in sizes} for name in trees}
        for t, (name, tree) in enumerate(trees.items()):  # warm-up: bytecode, page cache
            timed(apply(Path(tmp, f"warm-{t}"), fleets[sizes[0]]), envs[name], tree)
        for r in range(rounds):
            for size in sizes:  # alternating, so every size and tree sees the same load
                for t, (name, tree) in enumerate(trees.items()):
                    home = Path(tmp, f"home-{size[0]}-{size[1]}-{r}-{t}")
                    first[name][size].append(timed(apply(home, fleets[size]), envs[name], tree))
                    noop[name][size].append(timed(apply(home, fleets[size]), envs[name], tree))
                    change[name][size].append(
                        timed(apply(home, changed_fleets[size]), envs[name], tree))

    for name in trees:
        report(name, sizes, models_axis, servers_axis, first[name], noop[name], change[name])
    print(f"({rounds} round(s), medians, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
