"""The GPU evidence steps, declared: each step's name, the command it runs (a function of
scripts/gpu/evidence_lib.sh and its arguments), its budget and what it leaves in its folder.
scripts/gpu/evidence.py runs them in this order (the priority order) until the call's budget is
spent; scripts/results.py turns the folders into the READMEs' tables.

A step's budget is the bound, in seconds, of each wmfix command it runs (`LIMIT` in the library,
which `bounded` applies with `timeout --foreground -s INT`, so that wmfix still writes its
records), cut further by the call's deadline; None where the function bounds its commands itself
(a build, then a check: each its own bound, named in the function)."""

from dataclasses import dataclass, field

FENCELESS = ["cbe-dot", "cbe-ht", "ct-octree", "tpo-tm", "sdk-red-nf", "cub-scan-nf", "ls-bh-nf"]
FENCED = ["sdk-red", "cub-scan", "ls-bh"]

# What each function leaves in the step's folder besides log.txt (and DONE once it succeeded).
TEST = ("summary.json", "failures.txt")
REDUCE = ("reduce.json", "journal.jsonl", "fences.patch", "failures.txt")
RACE_REDUCE = REDUCE + ("race-start.json",)
RACE = ("race.json", "fences.json", "trace-0.bin.gz (under 40 MB)")
OUTPUTS = {
    "tune_step": ("raw.json", "profile.toml", "analysis.json", "patches.svg", "spread.svg"),
    "test_cell": TEST, "fenced_cell": TEST, "with_profile": TEST, "sdk_red_grid": TEST,
    "jobs_cell": TEST, "gpus_test": TEST, "gpus_test_mps": TEST, "gpus_runs": TEST,
    "gpus_runs_long": TEST, "wmfix_mps_test": TEST, "unfenced_runs": TEST, "serve_on_16": TEST,
    "serve_on_j": TEST, "paced_long": TEST, "paced_xl": TEST, "cold_mps": TEST, "trust_module_state": TEST,
    "lib_shipped": TEST, "completed_study": TEST, "race_stressed": TEST,
    "race_stressed_warm": TEST, "race_reduced_warm_stressed": TEST, "rare_stressed": TEST,
    "runs4_stressed": TEST, "warm_smoke": TEST + ("the warm processes' logs",),
    "builds_cell": TEST + ("failed-builds.txt",),
    "run_cost": ("run-cost.txt",),
    "cbe_ht_native": ("native.txt", "placement.txt"),
    "reduce_study": REDUCE, "gpus_reduce": REDUCE, "builds_reduce": REDUCE,
    "seeds_study": ("reduce-seed2.json", "reduce-seed3.json", "journal-seed2.jsonl", "journal-seed3.jsonl"),
    "cost_study": ("cost.json",),
    "litmus_cell": ("litmus.txt",), "peer_litmus": ("runs.txt",),
    "litmus_ablation": ("ablation.txt",), "litmus_distances": ("distances.txt",),
    "cli_checks": ("checks.txt",), "ctx_probe": ("probe.txt",), "ctx_probe_mps": ("probe.txt",),
    "race_step": RACE, "race_small": RACE, "race_reduced": RACE, "one_reduction": RACE,
    "trust_race": RACE, "race_app": RACE, "race_suite": RACE + ("verdicts.txt",),
    "racecheck": ("racecheck.txt",), "racecheck_one": ("racecheck.txt",),
    "race_reduce": RACE_REDUCE, "race_reduce_small": RACE_REDUCE, "race_reduce_warm": RACE_REDUCE,
    "race_reduce_warm_small": RACE_REDUCE, "race_reduce_warm_rare": RACE_REDUCE,
    "race_reduce_warm_runs4": RACE_REDUCE, "trust_reduce_one": RACE_REDUCE,
    "trust_reduce_strict": RACE_REDUCE, "trust_reduce_full": RACE_REDUCE,
    "ground_truth": RACE + ("confusion.txt",),
    "racecheck_ground_truth": ("racecheck.txt.xz", "confusion.txt"),
    "runtime_tests": ("summary.txt", "a file a test"),
    "overhead_bench": ("overhead.txt",),
    "trust_public": ("public.json", "public.md"),
}

# Each function's bound on its wmfix commands (the library's `${LIMIT:-N}`), where it takes one.
BUDGET = {
    "test_cell": 60, "with_profile": 60, "sdk_red_grid": 60, "jobs_cell": 60, "gpus_test": 60,
    "gpus_test_mps": 60, "gpus_runs": 60, "gpus_runs_long": 60, "wmfix_mps_test": 60,
    "trust_module_state": 60, "builds_cell": 60, "completed_study": 60,
    "fenced_cell": 150, "tune_step": 240, "cost_study": 150, "litmus_cell": 90,
    "reduce_study": 300, "gpus_reduce": 300, "builds_reduce": 300, "seeds_study": 300,
    "race_step": 240, "race_small": 240, "race_reduced": 240, "one_reduction": 240,
    "race_suite": 240, "race_app": 240,
    "race_reduce": 300, "race_reduce_small": 300, "race_reduce_warm": 300,
    "race_reduce_warm_small": 300, "race_reduce_warm_rare": 300, "race_reduce_warm_runs4": 300,
    "race_stressed": 240, "race_stressed_warm": 240, "rare_stressed": 240, "runs4_stressed": 240,
    "trust_race": 300, "ground_truth": 480, "runtime_tests": 300, "trust_public": 420,
    "unfenced_runs": 120, "serve_on_16": 120, "serve_on_j": 120, "paced_long": 200,
    "paced_xl": 300,
    "cold_mps": 200,
}


@dataclass
class Step:
    name: str
    command: list
    budget: object = "default"
    outputs: tuple = field(default=())

    def __post_init__(self):
        fn = self.function()
        if self.budget == "default":
            self.budget = BUDGET.get(fn)
        if not self.outputs:
            self.outputs = OUTPUTS.get(fn, ())

    def function(self):
        """The library function that does the work (`before` and `with_mps` wrap another; `lib_nf`
        takes its own bound first)."""
        c = self.command
        if c[0] in ("before", "with_mps"):
            return c[1]
        if c[0] == "lib_nf":
            return c[2]
        return c[0]


def steps(runs, profiles, new_tune, shipped):
    """The steps in priority order. runs: RUNS (an app cell's runs); profiles: the shipped
    profiles' folder; new_tune: stress-tune's profile in this results folder; shipped: the
    profile wmfix ships for this GPU ('' where none)."""
    s = []

    def add(name, *command, **kw):
        s.append(Step(name, [str(c) for c in command], **kw))

    # Issue 13: the stress. The tune (bounded, so a slow engine leaves what it measured in
    # raw.json); the fence-less studies under sys-str+ with the shipped default profile and
    # under aim-str+; the fenced studies, 300 runs (must not err); with every fence (must not
    # err either: a study that still errs has errors no fence removes); no-str-.
    add("stress-tune", "tune_step")
    for x in FENCELESS:
        add(f"stress-{x}-sys-shipped", "test_cell", x, "sys-str+", runs)
    for x in FENCELESS:
        add(f"stress-{x}-aim-shipped", "test_cell", x, "aim-str+", runs)
    for x in FENCED:
        add(f"stress-fenced-{x}", "fenced_cell", x, "sys-str+", 300)
    for x in FENCELESS:
        add(f"stress-allfences-{x}", "test_cell", x, "sys-str+", runs, "--", "--fences", "all")
    for x in FENCELESS:
        add(f"stress-{x}-no", "test_cell", x, "no-str-", runs)
    # CUB's own look-back through preprocessed mode, as written and with every fence.
    add("cub-scan-lib-sys-none", "test_cell", "cub-scan-lib", "sys-str+", 100, "--", "--fences", "none")
    add("cub-scan-lib-sys-all", "fenced_cell", "cub-scan-lib", "sys-str+", 100, "--", "--fences", "all")
    # The built-in default, the H200-tuned profile (not on an H200, where it is the shipped one),
    # the new tune, and a profile of two variants (runtime-cu/README.md, "Several variants").
    if shipped:
        for x in FENCELESS:
            add(f"stress-{x}-sys-builtin", "with_profile", f"{profiles}/hopper-default.toml", x, "sys-str+", runs)
    if shipped != "nvidia-h200":
        for x in FENCELESS:
            add(f"stress-{x}-sys-h200tuned", "with_profile", f"{profiles}/nvidia-h200.toml", x, "sys-str+", runs)
    for x in FENCELESS:
        add(f"stress-{x}-sys-newtune", "with_profile", new_tune, x, "sys-str+", runs)
    for x in FENCELESS:
        add(f"stress-{x}-sys-mix", "with_profile", f"{profiles}/examples/mix.toml", x, "sys-str+", runs)
    # sdk-red-nf's grid and reductions a run: does either open its window?
    for g in ["132 256", "1024 256", "4096 256", "132 1024", "256 256 1048576 10",
              "4096 256 1048576 100", "256 256 1048576 300", "256 256 1048576 1000",
              "256 256 65536 300", "256 256 65536 1000"]:
        add("stress-sdk-red-grid-" + g.replace(" ", "x"), "sdk_red_grid", *g.split())
    # What a run costs and how many at a time pay; cbe-ht natively.
    add("run-cost-cbe-dot", "run_cost", "cbe-dot")
    add("run-cost-sdk-red-nf", "run_cost", "sdk-red-nf")
    for j in [4, 8, 16, 32]:
        add(f"jobs-{j}-cbe-dot", "jobs_cell", j, "cbe-dot")
    add("cbe-ht-native", "cbe_ht_native")

    # Issue 14: reductions, their cost with and without the model's completion, the completed
    # sets stressed, two more seeds.
    for x in FENCELESS:
        add(f"reduce-{x}", "reduce_study", x)
        add(f"cost-{x}", "cost_study", x)
        add(f"cost-model-{x}", "cost_study", x, "--model")
        add(f"completed-{x}", "completed_study", x)
        add(f"seeds-{x}", "seeds_study", x)
    # Builds (steps) a run: ct-octree's and ls-bh-nf's sets at 1, 10 and 100 builds.
    for b in [1, 10]:
        add(f"builds-ct-octree-{b}-no2", "builds_cell", "ct-octree", b, "0,3,9-10,13")
        add(f"builds-ct-octree-{b}-no13", "builds_cell", "ct-octree", b, "0,2-3,9-10")
        add(f"builds-ls-bh-nf-{b}-no1", "builds_cell", "ls-bh-nf", b, "36,54")
    for b in [1, 10]:
        add(f"builds-ct-octree-{b}-b10set", "builds_cell", "ct-octree", b, "0,3,9,14")
    add("builds-ls-bh-nf-10-no1-which", "builds_cell", "ls-bh-nf", 10, "36,54", 400)
    add("reduce-ct-octree-b10", "builds_reduce", "ct-octree", 10)
    add("reduce-ls-bh-nf-b10", "builds_reduce", "ls-bh-nf", 10)
    for x in ["cbe-dot", "cbe-ht", "tpo-tm"]:
        add(f"reduce-{x}-rerun", "reduce_study", x)
    for x in ["ct-octree", "ls-bh-nf"]:
        add(f"reduce-{x}-quarters", "reduce_study", x)
    add("seeds-ct-octree-b10", "builds_reduce", "ct-octree", 10, "seeds")
    add("seeds-ls-bh-nf-b10", "builds_reduce", "ls-bh-nf", 10, "seeds")
    for x in ["ct-octree", "ls-bh-nf"]:
        add(f"reduce-{x}-steps10", "reduce_study", x, "--steps", 10)
    add("seeds-ct-octree-steps10", "builds_reduce", "ct-octree", 10, "seeds")
    add("builds-ct-octree-10-seedsunion", "builds_cell", "ct-octree", 10, "0,3-4,9-11,13-14", 400)
    add("builds-ct-octree-10-all", "builds_cell", "ct-octree", 10, "0-31", 400)
    add("builds-ct-octree-10-seed1set", "builds_cell", "ct-octree", 10, "0,3-4,9,13", 400)
    add("builds-ct-octree-10-seed3set", "builds_cell", "ct-octree", 10, "0,3,10-11,13", 400)
    add("reduce-ct-octree-steps10-rare02", "reduce_study", "ct-octree", "--steps", 10, "--rare-rate", "0.002")
    add("cost-ct-octree-steps10", "cost_study", "ct-octree", "--from", "reduce-ct-octree-steps10")
    for x in ["ct-octree", "ls-bh-nf"]:
        add(f"reduce-{x}-b100", "builds_reduce", x, 100)
    add("builds-ct-octree-100-no13", "builds_cell", "ct-octree", 100, "0,2-3,9-10")
    add("builds-ls-bh-nf-100-no1", "builds_cell", "ls-bh-nf", 100, "36,54")
    for x in ["ct-octree", "ls-bh-nf"]:
        add(f"seeds-{x}-b100", "builds_reduce", x, 100, "seeds")
    add("reduce-sdk-red-nf-aim", "reduce_study", "sdk-red-nf", "--env", "aim-str+")

    # The litmus engine, the peer benchmark, the ablation and the distances; the CLI on a GPU.
    for t in ["mp", "lb", "sb"]:
        for x in ["none", "default"]:
            add(f"litmus-{t}-{x}", "litmus_cell", t, x)
    add("peer-litmus", "peer_litmus")
    add("litmus-ablation", "litmus_ablation")
    add("litmus-distances", "litmus_distances")
    add("cli-checks", "cli_checks")

    # Issue 25: one GPU and two.
    for x in ["cbe-dot", "ls-bh-nf", "ct-octree"]:
        for n in [1, 2]:
            add(f"gpus-{n}-test-{x}", "gpus_test", x, n)
    for x in ["ls-bh-nf", "ct-octree", "cbe-dot"]:
        for n in [1, 2]:
            add(f"gpus-{n}-reduce-{x}", "gpus_reduce", x, n)
    # Issue 26: fence sites on shared or local memory, told at run time; coverage off and on.
    for x in ["sdk-red-tmpl"] + FENCELESS:
        add(f"coverage-test-{x}", "test_cell", x, "sys-str+", 100)
    add("coverage-reduce-sdk-red-tmpl", "reduce_study", "sdk-red-tmpl")
    for x, n in [("cub-scan-nf", 200), ("cbe-ht", 100), ("ct-octree", 100)]:
        add(f"coverage-off-test-{x}", "test_cell", x, "sys-str+", n)
        add(f"coverage-on-test-{x}", "test_cell", x, "sys-str+", n, "--", "--coverage")
    # Issue 29: where a short CUDA process's start goes.
    add("context-probe", "ctx_probe")
    # CUB's look-back with fences removed, instrumented in its own headers (lib_nf: its bound first).
    add("lib-nf-test-none", "lib_nf", 200, "test_cell", "cub-scan-lib-nf", "sys-str+", 100, "--", "--fences", "none", budget=200)
    add("lib-nf-test-all", "lib_nf", 200, "test_cell", "cub-scan-lib-nf", "sys-str+", 200, "--", "--fences", "all", budget=200)
    add("lib-shipped-test", "lib_shipped", "sys-str+", budget=200)
    add("lib-nf-minus-none", "lib_nf", 200, "test_cell", "cub-scan-lib-nf", "sys-str-", 100, "--", "--fences", "none", budget=200)
    add("lib-nf-minus-all", "lib_nf", 200, "test_cell", "cub-scan-lib-nf", "sys-str-", 200, "--", "--fences", "all", budget=200)
    add("lib-shipped-minus", "lib_shipped", "sys-str-", budget=200)
    add("reduce-cub-scan-lib-nf", "lib_nf", 380, "reduce_study", "cub-scan-lib-nf", "--env", "sys-str-", budget=380)
    add("reduce-cub-scan-lib-nf-own", "lib_nf", 400, "reduce_study", "cub-scan-lib-nf", "--env", "sys-str-", budget=400)
    add("lib-nf-keep-none", "lib_nf", 200, "test_cell", "cub-scan-lib-nf", "sys-str+", 100, "--", "--fences", "none", budget=200)
    add("lib-nf-keep-all", "lib_nf", 200, "test_cell", "cub-scan-lib-nf", "sys-str+", 200, "--", "--fences", "all", budget=200)
    add("cub-scan-lib-keep-none", "test_cell", "cub-scan-lib", "sys-str+", 100, "--", "--fences", "none")
    add("lib-shipped-keep", "lib_shipped", "sys-str+", budget=200)
    add("reduce-cub-scan-lib-nf-keep", "lib_nf", 420, "reduce_study", "cub-scan-lib-nf", budget=420)
    # MPS: a server of the step's own, and wmfix's.
    add("context-probe-mps", "with_mps", "ctx_probe_mps")
    add("mps-1-test-cbe-dot", "with_mps", "gpus_test", "cbe-dot", 1)
    add("nomps-1-test-cbe-dot", "gpus_test", "cbe-dot", 1)
    add("mps-2-test-cbe-dot", "with_mps", "gpus_test", "cbe-dot", 2)
    add("nomps-2-test-cbe-dot", "gpus_test", "cbe-dot", 2)
    add("wmfix-mps-test-cbe-dot", "wmfix_mps_test", "cbe-dot")
    add("wmfix-mps-reduce-ls-bh-nf", "reduce_study", "ls-bh-nf", "--mps")
    add("wmfix-mps-reduce-ct-octree", "reduce_study", "ct-octree", "--mps")

    # `wmfix race`: the suite, the runtime's GPU tests, the studies, racecheck beside it, the
    # reduced sets, the race oracle and what it kept stressed.
    add("race-suite", "race_suite")
    add("overhead-bench", "overhead_bench")
    add("runtime-tests", "runtime_tests")
    add("race-sdk-red-nf-one", "one_reduction", "sdk-red-nf")
    add("race-sdk-red-one", "one_reduction", "sdk-red")
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "ct-octree"]:
        add(f"race-{x}", "race_step", f"case-studies/{x}")
    add("racecheck-sdk-red-nf-one", "racecheck_one", "sdk-red-nf")
    for x in ["cbe-dot", "tpo-tm"]:
        add(f"racecheck-{x}", "racecheck", f"case-studies/{x}")
    for x in ["cub-scan-nf", "ls-bh-nf", "cub-scan", "ls-bh"]:
        add(f"race-{x}", "race_step", f"case-studies/{x}")
    add("race-sdk-red-nf", "race_small", "case-studies/sdk-red-nf")
    add("race-sdk-red", "race_small", "case-studies/sdk-red")
    add("racecheck-ls-bh-nf", "racecheck", "case-studies/ls-bh-nf")
    add("racecheck-sdk-red-one", "racecheck_one", "sdk-red")
    for x in ["cbe-ht", "ct-octree", "cub-scan-nf", "cub-scan", "ls-bh"]:
        add(f"racecheck-{x}", "racecheck", f"case-studies/{x}")
    for x, ids in [("cbe-dot", "0,3"), ("cbe-ht", "0,6"), ("tpo-tm", "0,12"), ("cub-scan-nf", "3,5"),
                   ("ls-bh-nf", "1,2,36,54"), ("ct-octree", "0,3,4,9,10,11,13,14")]:
        add(f"race-reduced-{x}", "race_reduced", x, ids)
    add("race-reduced-sdk-red-nf", "race_small", "case-studies/sdk-red-nf", "--fences", "1,2")
    add("race-reduced-sdk-red-nf-one", "one_reduction", "sdk-red-nf", "--fences", "1,2")
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "cub-scan-nf", "ls-bh-nf", "ct-octree"]:
        add(f"reduce-race-{x}", "race_reduce", x)
    add("reduce-race-sdk-red-nf", "race_reduce_small", "sdk-red-nf")
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "cub-scan-nf", "ls-bh-nf", "ct-octree", "sdk-red-nf"]:
        add(f"stress-reduce-race-{x}", "race_stressed", x)
    # wmfix's MPS server over one GPU and two.
    for n in [1, 2]:
        add(f"wmfix-mps-gpus-{n}-test-cbe-dot", "gpus_test_mps", "cbe-dot", n)
        add(f"wmfix-mps-gpus-{n}-reduce-ls-bh-nf", "gpus_reduce", "ls-bh-nf", n, "--mps")
        add(f"wmfix-mps-gpus-{n}-reduce-ct-octree", "gpus_reduce", "ct-octree", n, "--mps")

    # Warm runs (a process serving many runs): cold against warm, one GPU and two.
    add("warm-smoke", "warm_smoke")
    for n in [1, 2]:
        add(f"cold-gpus-{n}-test-cbe-dot-all", "gpus_runs", "cbe-dot", n, "--fences", "all")
        add(f"warm-gpus-{n}-test-cbe-dot-all", "gpus_runs", "cbe-dot", n, "--fences", "all", "--warm")
    for n in [1, 2]:
        add(f"warm-gpus-{n}-test-cbe-dot-all-4800", "gpus_runs_long", "cbe-dot", n, "--fences", "all", "--warm")
    for n in [1, 2]:
        add(f"warm1000-gpus-{n}-test-cbe-dot-all-4800", "gpus_runs_long", "cbe-dot", n, "--fences", "all", "--warm")
    for x in ["ls-bh-nf", "ct-octree"]:
        add(f"cold-gpus-1-reduce-{x}", "gpus_reduce", x, 1)
        for n in [1, 2]:
            add(f"warm-gpus-{n}-reduce-{x}", "gpus_reduce", x, n, "--warm")
    for x in FENCED:
        add(f"warm-fenced-{x}", "test_cell", x, "sys-str+", 300, "--", "--warm")
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "cub-scan-nf", "ls-bh-nf", "ct-octree", "sdk-red-nf"]:
        add(f"warm-stress-reduce-race-{x}", "race_stressed_warm", x)
    for x in ["cub-scan-nf", "ct-octree", "cbe-dot", "cbe-ht", "tpo-tm", "ls-bh-nf"]:
        add(f"warm-reduce-race-{x}", "race_reduce_warm", x)
    add("warm-reduce-race-sdk-red-nf", "race_reduce_warm_small", "sdk-red-nf")
    for x in ["ct-octree", "cub-scan-nf", "sdk-red-nf", "cbe-dot", "cbe-ht", "tpo-tm", "ls-bh-nf"]:
        add(f"warm-stress-warm-reduce-race-{x}", "race_reduced_warm_stressed", x, budget=None)
    add("warm-reduce-race-rare-ct-octree", "race_reduce_warm_rare", "ct-octree")
    add("warm-stress-warm-reduce-race-rare-ct-octree", "rare_stressed", "ct-octree")
    add("warm-reduce-race-runs4-ct-octree", "race_reduce_warm_runs4", "ct-octree")
    add("warm-stress-warm-reduce-race-runs4-ct-octree", "runs4_stressed", "ct-octree")

    # Issue 43: what a user can trust: race at its defaults, the race oracle's reductions,
    # module state across warm runs.
    for x in FENCELESS + FENCED:
        add(f"trust-race-{x}", "trust_race", f"case-studies/{x}")
    add("trust-reduce-race-sdk-red-nf-one", "trust_reduce_one")
    add("trust-reduce-race-strict-sdk-red-nf-one", "trust_reduce_strict", 256)
    add("trust-reduce-race-strict-sdk-red-nf-one-16", "trust_reduce_strict", 16)
    add("trust-reduce-race-sdk-red-nf", "trust_reduce_full")
    add("trust-cold-module-state", "trust_module_state")
    add("trust-warm-module-state", "trust_module_state", "--warm")

    # Issue 48: a warm process serves on after an erring run; `before`: the old binary.
    for x in ["cbe-dot", "cbe-ht", "tpo-tm"]:
        add(f"serve-on-cold-{x}", "unfenced_runs", x, 1, 100)
        add(f"serve-on-before-1-{x}", "before", "unfenced_runs", x, 1, 100, "--warm")
        add(f"serve-on-after-1-{x}", "unfenced_runs", x, 1, 1600, "--warm")
        add(f"serve-on-after-2-{x}", "unfenced_runs", x, 2, 3200, "--warm")
    add("serve-on-cold400-cbe-ht", "unfenced_runs", "cbe-ht", 1, 400)
    for x in ["cbe-dot", "cbe-ht"]:
        add(f"serve-on-after-1-long-{x}", "unfenced_runs", x, 1, 24000, "--warm")
        add(f"serve-on-after-2-long-{x}", "unfenced_runs", x, 2, 48000, "--warm")
    add("serve-on-after-1-j16-tpo-tm", "serve_on_16", "tpo-tm", 1, 3200, "--warm")
    add("serve-on-after-2-j16-tpo-tm", "serve_on_16", "tpo-tm", 2, 6400, "--warm")
    add("serve-on-after-1-j1-tpo-tm", "serve_on_j", 1, "tpo-tm", 1, 800, "--warm")
    add("serve-on-after-1-j4-tpo-tm", "serve_on_j", 4, "tpo-tm", 1, 1600, "--warm")
    add("serve-on-after-1-j2-tpo-tm", "serve_on_j", 2, "tpo-tm", 1, 1600, "--warm")
    for x in ["cbe-dot", "cbe-ht"]:
        add(f"serve-on-after-1-j1-{x}", "serve_on_j", 1, x, 1, 1600, "--warm")
    # Paced warm runs (run::pace), then over 8,000 runs a GPU on one GPU and two.
    for x in ["cbe-dot", "cbe-ht", "tpo-tm"]:
        add(f"serve-on-after-1-paced-{x}", "unfenced_runs", x, 1, 1600, "--warm")
    for x in ["cbe-dot", "cbe-ht", "tpo-tm"]:
        add(f"serve-on-after-1-paced-long-{x}", "paced_long", x, 1, 8000, "--warm")
        add(f"serve-on-after-2-paced-long-{x}", "paced_long", x, 2, 16000, "--warm")
    # Short runs (about 0.5 ms of a GPU each) over 40,000 runs a GPU: the processes' start, made
    # one after another on the host, a small part of the cell.
    for x in ["cbe-dot", "cbe-ht"]:
        add(f"serve-on-after-1-paced-xl-{x}", "paced_xl", x, 1, 40000, "--warm")
        add(f"serve-on-after-2-paced-xl-{x}", "paced_xl", x, 2, 80000, "--warm")
    add("serve-on-after-1-mps-tpo-tm", "unfenced_runs", "tpo-tm", 1, 1600, "--warm", "--mps")
    add("serve-on-after-1-mpsj16-tpo-tm", "serve_on_16", "tpo-tm", 1, 3200, "--warm", "--mps")
    add("serve-on-after-2-mps-tpo-tm", "unfenced_runs", "tpo-tm", 2, 3200, "--warm", "--mps")
    add("serve-on-cold-mps-tpo-tm", "cold_mps", "tpo-tm", 400)
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "sdk-red-nf", "cub-scan-nf", "ls-bh-nf", "ct-octree"]:
        add(f"serve-on-before-reduce-{x}", "before", "gpus_reduce", x, 1, "--warm")
        add(f"serve-on-after-reduce-{x}", "gpus_reduce", x, 1, "--warm")
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "cub-scan-nf", "ls-bh-nf", "ct-octree"]:
        add(f"serve-on-before-reduce-race-{x}", "before", "race_reduce_warm", x)
        add(f"serve-on-after-reduce-race-{x}", "race_reduce_warm", x)
    for x in ["cbe-dot", "cbe-ht", "tpo-tm", "sdk-red-nf", "cub-scan-nf", "ls-bh-nf", "ct-octree"]:
        add(f"serve-on-paced-reduce-{x}", "gpus_reduce", x, 1, "--warm")
        add(f"serve-on-paced-reduce-race-{x}", "race_reduce_warm", x)
    # Issue 44: public programs built, run natively and instrumented.
    add("trust-differential-public", "trust_public")

    # Issue 46: racecheck on the ground truth; the race applications (correct and -DRACY builds,
    # both models); the ground truth under each model, again, and in ten runs of one build.
    add("racecheck-ground-truth", "racecheck_ground_truth")
    # libcu++'s atomic_ref and atomic_thread_fence, traced with their scope and order.
    add("race-suite-libcuxx", "race_suite", "tests/race-suite-libcuxx")
    for app in ["ra-bfs", "ra-colour", "ra-steal", "ra-gemm-lock"]:
        for variant in ["ok", "racy"]:
            for m in ["ptx", "scoped-hrf"]:
                add(f"race-app-{app}-{variant}-{m}", "race_app", app, variant, m)
    for m in ["ptx", "scoped-hrf"]:
        add(f"ground-truth-{m}", "ground_truth", m)
        for i in [2, 3]:
            add(f"ground-truth-{m}-again-{i}", "ground_truth", m)
        add(f"ground-truth-{m}-runs10", "ground_truth", m, "--runs", 10, "--all-runs")
    return s
