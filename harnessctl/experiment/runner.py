"""Run the HAT study arm by arm under ``experiments/<id>/``, resumable at every level.

Layout of a study folder::

    plan.json                  the plan (a rerun with the same id must ask for the same plan)
    data/fixed, data/hsa       the two SFT datasets (same cases; shipped harness vs augmented)
    arms/<arm>/model/          the arm's checkpoint (a trainer output folder, with train.json)
    arms/<arm>/train.json      what its training did (steps, seconds, tokens, the log: learning curves)
    arms/<arm>/eval/suites/    its evaluation run on the agent suites (records.jsonl, summary.json)
    arms/<arm>/eval/history/   the real-history slice (the variant suite's cases under v1 and v2)
    arms/<arm>/eval/ifeval/    IFEval, on a sample of its own (``ifeval_limit``)
    arms/<arm>/eval/served/    the final arm only: livestream through the embedded server (latency)
    arms/<arm>/arm.json        written last: the arm is finished, never redone
    results.json, results.md, report.html

An arm whose ``arm.json`` exists is read back, not rerun. An arm stopped mid-way continues: its
training from the last checkpoint (``--resume`` of the stage), its evaluation from the cases on
disk (:func:`harnessctl.eval.runner.resume_eval`), its datasets from the pairs already logged.

>>> result = run_study(quick_plan(), "experiments/quick", command="harnessctl experiment hat --quick")  # doctest: +SKIP
>>> [g["status"] for g in result["goals"]]                                                              # doctest: +SKIP
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
from harnessctl.eval.runner import EvalConfig, resume_eval, run_eval
from harnessctl.eval.store import RunError, RunStore, atomic_write
from harnessctl.eval.suites import SuiteError, load_suite, suite_path
from harnessctl.harness import load_harness
from harnessctl.models.bases import BaseError, resolve_base
from harnessctl.models.registry import resolve_model
from harnessctl.models.server import EmbeddedServer
from harnessctl.progress import progress_bars
from harnessctl.sim.phrasings import load_phrasings
from trainer.common import CURVE_KEYS, TrainError, check_checkpoint

from .arms import (
    ARM_FILE,
    PLAN_FILE,
    TRAIN_FILE,
    Say,
    StudyError,
    _read_json,
    _train_seconds,
    _write_json,
    phase_config,
    stage_config,
    train_arm,
    trained,
)
from .plan import (
    ARMS,
    SUITES,
    Arm,
    PlanError,
    StudyPlan,
    changed_stages,
    plan_differences,
    plan_options,
    study_phases,
)
from .report import render_report
from .results import arm_metrics, judge_goals, markdown_table
from .side_by_side import train_side_by_side

RESULTS_JSON, RESULTS_MD, REPORT_HTML = "results.json", "results.md", "report.html"
RESULTS_VERSION = 1
#: Plan fields a continued study may change: they add arms or change speed, never a result.
FREE_FIELDS = ("ablations", "eval_jobs")
#: The arm whose model the latency goal is measured on (the final model).
FINAL_ARM = "hat"


def open_study(plan: StudyPlan, root: str | Path, *, replan: bool = False) -> Path:
    """Create the study folder with its plan, or check that an existing one was started with the
    same plan (adding ``ablations`` to a finished study is allowed: it only adds arms; ``eval_jobs``
    may change: how many episodes run at once changes no result). With ``replan``, a stage's fields
    (``--set sft.max_steps=...``) may also change while no arm of that stage has started: the change
    is recorded in ``plan-changes.jsonl`` and the arms that train later use it."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise StudyError(f"{root}: is a file; pass --out with a folder and --id with a new name")
    old = _read_json(root / PLAN_FILE)
    new = plan.to_dict()
    if old is not None:
        old = {**new, **old}  # a field added since the study started could not have been chosen otherwise
        diffs = plan_differences(
            {k: v for k, v in old.items() if k not in FREE_FIELDS},
            {k: v for k, v in new.items() if k not in FREE_FIELDS},
        )
        if diffs:
            changed = _untrained_stage_changes(old, new, plan, root)
            if changed is None or not replan:
                hint = " (or pass --replan: only stage fields of arms not started differ)" if changed else ""
                raise StudyError(
                    f"{root / PLAN_FILE}: this study was started with another plan ({'; '.join(diffs[:3])}); "
                    f"continue it with the options it was started with ({_started_with(old)}){hint}, "
                    "or choose another --id"
                )
            with open(root / PLAN_CHANGES_FILE, "a", encoding="utf-8") as f:
                f.write(
                    json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "stages": changed, "changes": diffs}) + "\n"
                )
    elif root.is_dir() and any(root.iterdir()):
        raise StudyError(f"{root}: not empty and holds no {PLAN_FILE}; choose another --id or --out")
    root.mkdir(parents=True, exist_ok=True)
    _write_json(root / PLAN_FILE, new)
    return root


#: Where a study records the stage fields it changed before their arms trained (one JSON per change).
PLAN_CHANGES_FILE = "plan-changes.jsonl"


def _untrained_stage_changes(old: dict[str, Any], new: dict[str, Any], plan: StudyPlan, root: Path) -> list[str] | None:
    """The stages (or second phases) whose fields differ between ``old`` and ``new``, when nothing
    else differs and no arm that trains them has started under ``root``; None otherwise (the change
    would mix two plans in one arm, or change a result already on disk)."""
    rest = plan_differences(
        {k: v for k, v in old.items() if k not in (*FREE_FIELDS, "stage_overrides")},
        {k: v for k, v in new.items() if k not in (*FREE_FIELDS, "stage_overrides")},
    )
    if rest:
        return None
    stages = changed_stages(old, new)
    phases = {p.name: p.stage for p in study_phases().values()}
    for stage in stages:
        core = phases.get(stage, stage)
        for arm in plan.arms():
            arm_dir = root / "arms" / arm.name
            if arm.stage == core and arm_dir.is_dir() and any(arm_dir.iterdir()):
                return None
    return stages


def _started_with(plan: dict[str, Any]) -> str:
    try:
        options = plan_options(plan)
    except PlanError:  # a plan.json edited by hand: the differences above still say what is wrong
        return "see its plan.json"
    return shlex.join(options) if options else "no options: the full preset"


# -- data ------------------------------------------------------------------------------------------


def build_datasets(plan: StudyPlan, root: Path, say: Say) -> dict[str, Any]:
    """The two SFT datasets, on the same cases: the shipped harness only (``fixed``) and HSA
    variants (``hsa``). Resumable (pairs already logged are skipped)."""
    harness = load_harness(plan.harness)
    phrasings = load_phrasings(plan.data_phrasings) if plan.data_phrasings else None
    out: dict[str, Any] = {}
    for name, fixed in (("fixed", True), ("hsa", False)):
        folder = root / "data" / name
        done = _read_json(folder / "summary.json")
        if done and done.get("kept"):
            out[name] = done
            continue
        say(
            f"data {name}: {plan.data_n} oracle trajectories {'under the shipped harness' if fixed else 'under HSA variants'}"
        )
        started = time.perf_counter()
        spec = TrajectorySpec(
            n=plan.data_n,
            seed=plan.seed,
            variants=plan.data_variants,
            strength=plan.data_strength,
            canonical_share=plan.data_canonical_share,
            fixed_harness=fixed,
            vary_wording=plan.data_vary_wording,
            phrasings=phrasings,
            quote_skills=plan.data_quote_skills,
        )
        summary = build_trajectories(harness, folder, spec)
        out[name] = {**summary.to_dict(), "seconds": round(time.perf_counter() - started, 2)}
    return out


# -- one arm ---------------------------------------------------------------------------------------


def _eval_progress(enabled: bool, label: str) -> Any:
    """Progress of one arm's evaluation, one task per suite (``eval hat livestream 20/40``)."""

    @contextmanager
    def bars() -> Iterator[Any]:
        with progress_bars(label, enabled=enabled, eta=False) as update:
            yield lambda suite, done, total: update(f"{label} {suite}", done, total)

    return bars()


HISTORY_DIR = "evals-history"
#: Evaluation runs of every arm beside its ``suites`` run, each with a sample size of its own.
EXTRA_RUNS = ("history", "ifeval")
#: The suites of an arm's ``suites`` run: IFEval has a run of its own.
AGENT_SUITES = tuple(s for s in SUITES if s != "ifeval")


def check_inputs(plan: StudyPlan, *, suites: bool = True) -> None:
    """The plan's harness loads, its ``base_model`` (if any) is a checkpoint, its
    ``data_phrasings`` (if any) is a good phrasings file, and (with ``suites``)
    every suite it evaluates on reads: checked before the study folder is written, so the corrected
    command starts afresh rather than being refused as another plan, and before anything trains.
    Raises ``HarnessError`` (the CLI names the file and line) or ``StudyError``."""
    load_harness(plan.harness)
    if plan.data_phrasings:
        load_phrasings(plan.data_phrasings)
    if plan.base_model:
        try:
            check_checkpoint(plan.base_model, "base_model")
        except TrainError as e:
            raise StudyError(str(e)) from None
    if plan.pretrained_base:
        try:
            resolve_base(plan.pretrained_base)
        except BaseError as e:
            raise StudyError(f"pretrained_base: {e}") from None
    if suites:
        check_suites(plan)


def check_suites(plan: StudyPlan) -> None:
    """Every suite the study evaluates on is there and reads: checked before anything trains, since
    the first evaluation comes after the first arm's training.

    >>> from harnessctl.experiment import apply_overrides, quick_plan
    >>> check_suites(apply_overrides(quick_plan(), ["evals_dir=/nonexistent"]))
    Traceback (most recent call last):
    ...
    harnessctl.experiment.arms.StudyError: evals_dir /nonexistent: /nonexistent/livestream.jsonl: suite file missing; rebuild the suites with `harnessctl eval build-suites --evals-dir /nonexistent`
    """
    for suite in SUITES:
        try:
            load_suite(suite, plan.evals_dir)
        except SuiteError as e:
            raise StudyError(f"evals_dir {plan.evals_dir}: {e}") from None


def history_evals(plan: StudyPlan, root: Path) -> Path:
    """A suites folder holding only the real-history slice of the variant suite (its cases under
    the shipped versions v1 and v2, lines copied unchanged), so every arm is scored on it with a
    sample of its own rather than the few history cases an even spread of the whole suite holds."""
    folder = root / HISTORY_DIR
    target = suite_path("variant", folder)
    if not target.is_file():
        source = suite_path("variant", plan.evals_dir)
        if not source.is_file():
            raise StudyError(f"{source}: suite file missing; rebuild the suites with `harnessctl eval build-suites`")
        lines = [
            line
            for line in source.read_text(encoding="utf-8").splitlines(keepends=True)
            if '"history:v' in line and json.loads(line).get("harness", {}).get("kind") == "rev"
        ]
        if not lines:
            raise StudyError(f"{source}: no case under the real history (history:v1/v2); rebuild the suites")
        folder.mkdir(parents=True, exist_ok=True)

        atomic_write(target, "".join(lines))
    return folder


def evaluate_arm(
    plan: StudyPlan, arm: Arm, root: Path, say: Say, progress: bool, *, kind: str = "suites"
) -> tuple[Path, float]:
    """Evaluate the arm's model: ``suites`` (the agent suites), ``history`` (the real-history
    slice), ``ifeval`` (IFEval on ``plan.ifeval_limit`` prompts) or ``served`` (livestream through
    the embedded OpenAI-compatible server); resumes a run stopped mid-way, skips a finished one.
    Returns the run folder and the seconds spent now."""
    served = kind == "served"
    arm_dir = root / "arms" / arm.name
    runs_dir, run_id = arm_dir / "eval", kind
    run_dir = runs_dir / run_id
    model_dir = (arm_dir / "model").resolve()
    if _complete(run_dir):
        return run_dir, 0.0
    started = time.perf_counter()
    server = None
    try:
        if served:
            server = EmbeddedServer(
                resolve_model(eval_model(plan, model_dir)), model_name=arm.name, port=0, api_key=None
            ).start()
            model, api_base, suites = f"openai/{arm.name}", server.url, ["livestream"]
        else:
            model, api_base = eval_model(plan, model_dir), None
            suites = {"history": ["variant"], "ifeval": ["ifeval"]}.get(kind, list(AGENT_SUITES))
        evals_dir = str(history_evals(plan, root)) if kind == "history" else plan.evals_dir
        limit = {"history": plan.history_limit, "ifeval": plan.ifeval_limit}.get(kind, plan.eval_limit)
        what = {"history": "the real-history slice (v1, v2)"}.get(kind, ", ".join(suites))
        say(
            f"arm {arm.name}: evaluate on {what}"
            + (" through the embedded server" if served else "")
            + ((f", {limit} prompts" if kind == "ifeval" else f", {limit} cases each") if limit else "")
        )
        with _eval_progress(progress, f"eval {arm.name}") as update:
            if (run_dir / "manifest.json").is_file():
                if served:  # the server's port changed: a served run restarts rather than resumes
                    shutil.rmtree(run_dir)
                else:
                    resume_eval(run_dir, jobs=eval_jobs(plan, model), progress=update)
            if not (run_dir / "manifest.json").is_file():
                cfg = EvalConfig(
                    suites=suites,
                    model=model,
                    api_base=api_base,
                    jobs=plan.served_jobs if served else eval_jobs(plan, model),
                    limit=limit or None,
                    cache=False,
                    harness_path=plan.harness,
                    evals_dir=evals_dir,
                    runs_dir=str(runs_dir),
                    max_tokens=plan.eval_max_tokens,
                    seed=plan.seed,
                    max_error_share=1.0,
                )
                run_eval(cfg, run_id=run_id, progress=update)
    except SuiteError as e:  # a suite file removed or damaged since the study checked it
        raise StudyError(f"arm {arm.name}: {e}") from None
    finally:
        if server is not None:
            server.stop()
    RunStore.open(run_dir)  # fails loudly if the run folder is not there
    return run_dir, time.perf_counter() - started


def run_arm(plan: StudyPlan, arm: Arm, root: Path, say: Say, progress: bool) -> dict[str, Any]:
    """Train and evaluate one arm, unless it finished before; returns its ``arm.json``."""
    arm_dir = root / "arms" / arm.name
    done = _read_json(arm_dir / ARM_FILE)
    if done and done.get("status") == "done":
        say(f"arm {arm.name}: finished before, reusing {arm_dir / ARM_FILE}")
        missing = [kind for kind in EXTRA_RUNS if not _complete(arm_dir / "eval" / kind)]
        if not missing:
            return _refresh(done, arm_dir)
        # a study started before these runs had their own sample: measure them, train nothing
        seconds = sum(evaluate_arm(plan, arm, root, say, progress, kind=kind)[1] for kind in missing)
        done = _refresh(done, arm_dir)
        done["compute"]["eval_s"] = round(done["compute"].get("eval_s", 0.0) + seconds, 2)
        _write_json(arm_dir / ARM_FILE, done)
        return done
    arm_dir.mkdir(parents=True, exist_ok=True)
    train = train_arm(plan, arm, root, say, progress)
    run_dir, eval_s = evaluate_arm(plan, arm, root, say, progress)
    extra_s = sum(evaluate_arm(plan, arm, root, say, progress, kind=kind)[1] for kind in EXTRA_RUNS)
    served_s = 0.0
    if arm.name == FINAL_ARM:
        _, served_s = evaluate_arm(plan, arm, root, say, progress, kind="served")
    eval_s += extra_s
    metrics = _study_metrics(arm_dir)
    parents = _lineage(plan, arm, root)
    compute = {
        "train_steps": train.get("steps", 0),
        "train_s": _train_seconds(train),
        "train_tokens": train.get("tokens", 0),
        "tokens_per_s": train.get("tokens_per_s", 0.0),
        "eval_s": round(eval_s + served_s, 2),
        "eval_episodes": sum(metrics["n"].values()),
        # the whole chain from scratch: this arm's training plus its ancestors'
        "chain_train_s": round(_train_seconds(train) + sum(p.get("train_s", 0.0) for p in parents), 2),
        "chain_train_steps": train.get("steps", 0) + sum(p.get("train_steps", 0) for p in parents),
        # where the times were measured (None for an arm trained before manifests recorded it)
        "hardware": train.get("hardware"),
    }
    record = {
        "name": arm.name,
        "label": arm.label,
        "stage": arm.stage,
        "parent": arm.parent,
        "data": arm.data,
        "hsa": arm.hsa if arm.stage == "rl" else None,
        "ablation": arm.ablation,
        "status": "done",
        "model": str(arm_dir / "model"),
        "eval_run": str(run_dir),
        "metrics": metrics,
        "compute": compute,
        "curve": _curve(train.get("log", [])),
        "train_extra": train.get("extra", {}),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _write_json(arm_dir / ARM_FILE, record)
    return record


def _refresh(done: dict[str, Any], arm_dir: Path) -> dict[str, Any]:
    """A finished arm's numbers read again from its evaluation runs (the runs are the record;
    nothing is trained or evaluated again)."""
    try:
        return {**done, "metrics": _study_metrics(arm_dir)}
    except (OSError, ValueError, RunError):
        # the run folder was removed: keep the numbers written when the arm finished
        return done


def _study_metrics(arm_dir: Path) -> dict[str, Any]:
    """An arm's metrics from its suites run, with the history, IFEval and served runs beside it
    folded in; raises when the suites run cannot be read."""
    metrics = arm_metrics(arm_dir / "eval" / "suites")
    history = arm_dir / "eval" / "history"
    if (history / "manifest.json").is_file():
        h = arm_metrics(history)
        for rev in ("v1", "v2"):
            metrics["slices"][f"history_{rev}"] = h["slices"][f"history_{rev}"]
            metrics["intervals"][f"history_{rev}"] = h["intervals"][f"history_{rev}"]
        metrics["history"] = {k: v for k, v in h["families"].items() if k.startswith("history:")}
        metrics["families"] = {
            **{k: v for k, v in metrics["families"].items() if not k.startswith("history:")},
            **metrics["history"],
        }
        metrics["n"]["history"] = h["n"].get("variant", 0)
    ifeval = arm_dir / "eval" / "ifeval"
    if (ifeval / "manifest.json").is_file():  # its own, larger sample replaces the suites run's
        i = arm_metrics(ifeval)
        metrics["scores"]["ifeval"] = i["scores"].get("ifeval")
        metrics["intervals"]["ifeval"] = i["intervals"].get("ifeval")
        metrics["n"]["ifeval"] = i["n"].get("ifeval", 0)
        metrics["errors"] += i["errors"]
    served = arm_dir / "eval" / "served"
    if (served / "manifest.json").is_file():
        s = arm_metrics(served)
        metrics["served_latency"] = {**s["latency"], "livestream": s["scores"].get("livestream")}
    return metrics


def eval_model(plan: StudyPlan, model_dir: Path) -> str:
    """The model string an arm is evaluated through: ``llamacpp:`` for a study on a pretrained base
    when llama.cpp is installed (``harnessctl[llamacpp]``) and no GPU is present, else ``local:``.

    Why: on a CPU llama.cpp ran SmolLM2 adapter episodes 2.7x faster than transformers with the
    same greedy turns (46 of 46, docs/models.md#llamacpp-backend); the tiny model (Qwen3) has no
    llama.cpp export, and on a GPU transformers batches.

    >>> eval_model(StudyPlan(), Path("arms/sft/model"))
    'local:arms/sft/model'
    """
    if plan.pretrained_base and _llamacpp_fits():
        return f"llamacpp:{model_dir}"
    return f"local:{model_dir}"


def eval_jobs(plan: StudyPlan, model: str) -> int:
    """Episodes in flight in an arm's in-process run: one through llama.cpp, which decodes one
    sequence at a time under a lock (more only queue behind it, each case's wait growing until
    it times out: 35 of 120 cases did at 8 on a loaded 2-core CPU), else ``plan.eval_jobs``.

    >>> eval_jobs(StudyPlan(eval_jobs=8), "llamacpp:arms/sft/model"), eval_jobs(StudyPlan(eval_jobs=8), "local:m")
    (1, 8)
    """
    return 1 if model.startswith("llamacpp:") else plan.eval_jobs


def _llamacpp_fits() -> bool:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return False
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


def _complete(run_dir: Path) -> bool:
    """Whether the evaluation run in ``run_dir`` has finished every case."""
    return bool((_read_json(run_dir / "summary.json") or {}).get("complete"))


def _lineage(plan: StudyPlan, arm: Arm, root: Path) -> list[dict[str, Any]]:
    out, parent = [], arm.parent
    while parent:
        rec = _read_json(root / "arms" / parent / TRAIN_FILE) or {}
        out.append({"train_s": _train_seconds(rec), "train_steps": rec.get("steps", 0)})
        parent = ARMS[parent].parent
    return out


def _curve(log: list[dict[str, Any]]) -> list[dict[str, float]]:
    """The learning curve from the trainer's log: step and the stage's headline metrics (SFT's
    held-out loss as ``eval_loss``, distillation's loss on its SFT parent's held-out rows as
    ``heldout_loss`` and, with ``heldout_calls``, its first-call match there).

    >>> _curve([{"step": 5, "heldout_loss": 0.7638, "heldout_call_match": 0.2, "epoch": 0.1},
    ...         {"step": 5, "loss": 2.0, "grad_norm": 3.1}, {"step": 6, "learning_rate": 1e-5}])
    [{'step': 5, 'heldout_loss': 0.7638, 'heldout_call_match': 0.2}, {'step': 5, 'loss': 2.0}]
    """
    out = []
    for row in log:
        point = {"step": row.get("step", 0.0)}
        for key in CURVE_KEYS:
            if key in row:
                point[key] = round(float(row[key]), 5)
        if len(point) > 1:
            out.append(point)
    return out


# -- the study -------------------------------------------------------------------------------------


def run_study(
    plan: StudyPlan,
    root: str | Path,
    *,
    command: str = "harnessctl experiment hat",
    say: Say | None = None,
    progress: bool = True,
    train_only: bool = False,
    eval_only: bool = False,
    only_arms: list[str] | None = None,
    train_jobs: int = 1,
    replan: bool = False,
) -> dict[str, Any]:
    """Run (or continue) the study ``plan`` describes under ``root``; writes ``results.json``,
    ``results.md`` and ``report.html`` and returns the results.

    ``train_only`` trains every arm that is not trained yet and stops before any evaluation
    (returns ``{"trained": [...arm names...]}``); the same call without it then evaluates. Training
    is the part that wants the accelerator, evaluation the part that wants many parallel episodes:
    the two can run at different times, or on different machines sharing the folder.

    ``eval_only`` evaluates every arm whose training has finished and trains nothing: run beside a
    ``train_only`` run, it evaluates arms as they finish training. It writes the results once every
    arm is done; until then it returns ``{"evaluated": [...], "waiting": [...]}``.

    ``only_arms`` (with ``train_only``) trains just these arms, whose parents must be trained: two
    arms with the same parent (fixed-SFT and HSA-SFT) can then train at once, one process each.
    With ``eval_only`` it evaluates just these arms; the others wait.

    ``train_jobs`` above 1 trains up to that many arms whose parent is trained at once, each in a
    process of its own (:mod:`~harnessctl.experiment.side_by_side`).

    ``replan`` lets a continued study change the fields of stages none of whose arms has started
    (:func:`open_study`)."""
    if train_only and eval_only:
        raise StudyError("--train-only and --eval-only exclude each other; pass one of them, or neither")
    if only_arms and not (train_only or eval_only):
        raise StudyError("--arm picks the arms --train-only trains or --eval-only evaluates; add one, or drop --arm")
    say = say or (lambda _msg: None)
    try:
        import trainer.stages  # noqa: F401 - the study needs the trainer
    except ImportError as e:
        raise StudyError(
            f"the study needs the train extra ({e.name} is missing): pip install 'harnessctl[train]'"
        ) from None
    try:
        plan = StudyPlan.from_dict(plan.to_dict())
    except PlanError as e:
        raise StudyError(str(e)) from None
    wall = time.perf_counter()
    root, arms = Path(root), plan.arms()
    # every stage's config and every --arm is checked before anything runs or is written
    for arm in arms:
        stage_config(plan, arm, root)
        if phase := plan.second_phase(arm.stage):
            phase_config(plan, arm, root, phase)
    chosen = _chosen_arms(arms, only_arms, root, parents_trained=not eval_only)
    check_inputs(plan, suites=not train_only)
    root = open_study(plan, root, replan=replan)
    pending = [a for a in arms if (_read_json(root / "arms" / a.name / ARM_FILE) or {}).get("status") != "done"]
    data: dict[str, Any] = _read_json(root / "data" / "study-data.json") or {}
    if any(a.stage == "sft" for a in pending) or not data:
        built = build_datasets(plan, root, say)
        for name, summary in built.items():  # a dataset built by an earlier run keeps the seconds it took
            if "seconds" not in summary and "seconds" in data.get(name, {}):
                summary["seconds"] = data[name]["seconds"]
        data = built
        _write_json(root / "data" / "study-data.json", data)
    if train_only:
        names = train_arms(plan, [a for a in chosen if a in pending], root, say, progress, train_jobs)
        return {"id": root.name, "trained": names, "evaluated": False}
    if eval_only:
        records, evaluated, waiting = [], [], []
        for arm in arms:
            if arm in pending and not trained(root, arm):
                say(f"arm {arm.name}: not trained yet, not evaluated")
                waiting.append(arm.name)
                continue
            if arm in pending and arm not in chosen:
                say(f"arm {arm.name}: not named by --arm, not evaluated")
                waiting.append(arm.name)
                continue
            records.append(run_arm(plan, arm, root, say, progress))
            if arm in pending:
                evaluated.append(arm.name)
        if waiting:
            return {"id": root.name, "evaluated": evaluated, "waiting": waiting}
    else:
        records = []
        for arm in arms:
            if arm in pending and not trained(root, arm):  # with its untrained siblings, side by side
                siblings = [a for a in pending if a.parent == arm.parent and not trained(root, a)]
                train_arms(plan, siblings[: max(1, train_jobs)], root, say, progress, train_jobs)
            records.append(run_arm(plan, arm, root, say, progress))
    results = collect(plan, root, records, data, command=command, wall_s=time.perf_counter() - wall)
    write_outputs(root, results)
    return results


def train_arms(plan: StudyPlan, arms: list[Arm], root: Path, say: Say, progress: bool, jobs: int = 1) -> list[str]:
    """Train every arm of ``arms`` not trained yet, parents first; returns their names. With
    ``jobs`` above 1, arms whose parents are trained train up to ``jobs`` at once, side by side."""

    names: list[str] = []
    todo = [a for a in arms if not trained(root, a)]
    while todo:
        ready = [a for a in todo if not a.parent or trained(root, ARMS[a.parent])]
        if not ready:  # a parent outside ``arms`` is untrained: _chosen_arms refused that already
            break
        if jobs > 1 and len(ready) > 1:
            names += train_side_by_side(plan, ready[:jobs], root, say, progress)
        else:
            (root / "arms" / ready[0].name).mkdir(parents=True, exist_ok=True)
            train_arm(plan, ready[0], root, say, progress)
            names.append(ready[0].name)
        left = [a for a in todo if not trained(root, a)]
        if len(left) == len(todo):  # nothing trained and nothing raised: never loop on it
            raise StudyError(f"arm {left[0].name}: training ended without its model; see arms/{left[0].name}")
        todo = left
    return names


def _chosen_arms(arms: list[Arm], names: list[str] | None, root: Path, *, parents_trained: bool = True) -> list[Arm]:
    """The arms ``--arm`` names (all of them when none is named); with ``parents_trained`` (arms
    to train) each parent must be trained or named too."""
    if not names:
        return arms
    by_name = {a.name: a for a in arms}
    for name in names:
        if name not in by_name:
            raise StudyError(f"--arm {name!r}: not an arm of this study; arms are {', '.join(by_name)}")
        parent = by_name[name].parent
        if parents_trained and parent and parent not in names and not trained(root, by_name[parent]):
            raise StudyError(
                f"--arm {name}: its parent arm {parent} is not trained yet; train it first (--arm {parent}) "
                "or name both"
            )
    return [a for a in arms if a.name in names]


def collect(
    plan: StudyPlan, root: Path, records: list[dict[str, Any]], data: dict[str, Any], *, command: str, wall_s: float
) -> dict[str, Any]:
    """``results.json``'s content: per-arm numbers, the goals, the compute."""
    table: dict[str, dict[str, Any]] = {}
    for r in records:
        m = r["metrics"]
        table[r["name"]] = {**m["scores"], **m["slices"]}
    final = next((r for r in records if r["name"] == FINAL_ARM), None)
    latency = None
    if final is not None:
        latency = dict(final["metrics"].get("served_latency") or final["metrics"]["latency"])
        latency["where"] = (
            f"embedded server, livestream, {plan.served_jobs} episodes in flight"
            if final["metrics"].get("served_latency")
            else f"in process, {plan.eval_jobs} episodes in flight"
        )
    data_s = sum(float(d.get("seconds", 0.0)) for d in data.values())
    return {
        "results_version": RESULTS_VERSION,
        "id": root.name,
        "command": command,
        "plan": plan.to_dict(),
        "eval_cases": plan.eval_limit or "every case",
        "ifeval_prompts": plan.ifeval_limit or "every prompt",
        "arms": records,
        "scores": table,
        "goals": judge_goals(table, latency),
        "data": data,
        "compute": {
            "data_s": round(data_s, 2),
            "train_s": round(sum(r["compute"]["train_s"] for r in records), 2),
            "eval_s": round(sum(r["compute"]["eval_s"] for r in records), 2),
            "wall_s": round(wall_s, 2),  # of this invocation (a resumed study reuses finished arms)
            "hardware": arms_hardware(records),
        },
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def arms_hardware(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each distinct machine the arms trained on, with the arms it trained (a study resumed
    elsewhere has more than one; arms without the record are left out).

    >>> cpu = {"device": "cpu", "processor": "AMD EPYC", "threads": 2, "precision": "fp32"}
    >>> arms_hardware([{"name": "base", "compute": {"hardware": cpu}}, {"name": "hat", "compute": {}}])
    [{'device': 'cpu', 'processor': 'AMD EPYC', 'threads': 2, 'precision': 'fp32', 'arms': ['base']}]
    """
    out: list[dict[str, Any]] = []
    for r in records:
        hw = (r.get("compute") or {}).get("hardware")
        if not hw:
            continue
        same = next((h for h in out if {k: v for k, v in h.items() if k != "arms"} == hw), None)
        if same is None:
            out.append({**hw, "arms": [r["name"]]})
        else:
            same["arms"].append(r["name"])
    return out


def write_outputs(root: Path, results: dict[str, Any]) -> None:
    _write_json(root / RESULTS_JSON, results)
    (root / RESULTS_MD).write_text(markdown_table(results), encoding="utf-8")
    (root / REPORT_HTML).write_text(render_report(results), encoding="utf-8")
