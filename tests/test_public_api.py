"""The public API of each package is pinned, and `import kimmy_swarm.swarm` stays light."""

from __future__ import annotations

import subprocess
import sys

from kimmy_swarm import kernels, model, rewards, swarm
from kimmy_swarm.swarm import progress

SWARM_API = {
    "AdaptiveLimit",
    "Approval",
    "ApprovalError",
    "ApprovalPolicy",
    "Backoff",
    "Budget",
    "ConfigError",
    "CycleError",
    "Decision",
    "ErrorInfo",
    "Event",
    "EventFold",
    "EventSink",
    "FailurePolicy",
    "LimitError",
    "ModelError",
    "Plan",
    "PlanValidationError",
    "RateLimit",
    "RunConfig",
    "RunResult",
    "RunStatus",
    "Scheduler",
    "SpawnError",
    "Subtask",
    "SubtaskContext",
    "SubtaskResult",
    "SubtaskStatus",
    "Swarm",
    "SwarmError",
    "Timings",
    "Transcript",
    "TranscriptCapture",
    "Usage",
    "UserError",
    "Worker",
    "__version__",
    "critical_path",
    "critical_path_length",
    "gather_all",
    "load_plan",
    "new_run_id",
    "parse_event",
    "parse_plan",
    "read_transcript",
    "topological_generations",
    "validate_plan",
}


def test_swarm_exports_exactly_its_public_api() -> None:
    assert set(swarm.__all__) == SWARM_API  # swarm.llm's is pinned in its own tests
    for pkg in (swarm, progress):
        for name in pkg.__all__:
            assert getattr(pkg, name) is not None, f"{pkg.__name__}.{name}"


AGENTS_API = {
    "BUILTIN_ROLE_NAMES",
    "AgentStepLimitError",
    "Answer",
    "Attempt",
    "Brief",
    "MadeBy",
    "Pipeline",
    "PipelineFiles",
    "PipelineRun",
    "PipelineSettings",
    "Provenance",
    "Role",
    "RoleRegistry",
    "Rules",
    "RunInputs",
    "RunResources",
    "SubAgent",
    "SubtaskBrief",
    "Tool",
    "ToolBox",
    "ToolError",
    "builtin_roles",
    "fallbacks",
    "falls_back",
    "install",
    "make_tool",
    "pipelines",
    "register_pipeline",
    "resume_pipeline",
    "run_pipeline",
}


def test_agents_exports_exactly_its_public_api() -> None:
    from kimmy_swarm import agents
    from kimmy_swarm.agents import analysis, review

    assert set(agents.__all__) == AGENTS_API
    for pkg in (agents, review, analysis):
        assert pkg.__doc__
        for name in pkg.__all__:
            assert getattr(pkg, name) is not None, f"{pkg.__name__}.{name}"


def test_import_agents_stays_light() -> None:
    code = (
        "import sys, kimmy_swarm.agents; "
        "print(','.join(m for m in ('torch', 'pandas', 'sklearn', 'matplotlib', 'bm25s', "
        "'statsmodels') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


MODEL_API = {
    "CheckpointError",
    "GGUFError",
    "GenerationError",
    "HybridCache",
    "KDAState",
    "KimiLinearConfig",
    "KimiLinearForCausalLM",
    "KimiModelError",
    "KnownModel",
    "LinearAttnConfig",
    "LlamaCache",
    "LlamaConfig",
    "LlamaForCausalLM",
    "MLAState",
    "ModelConfigError",
    "ModelInstallError",
    "ModelNotFoundError",
    "MuonClip",
    "Qwen2Config",
    "Qwen2ForCausalLM",
    "SamplingParams",
    "Tokenizer",
    "cache_bytes_per_sequence",
    "generate",
    "hybrid_layers",
    "install_model",
    "load_gguf",
    "load_tokenizer",
    "resolve_model",
    "train_bpe_tokenizer",
}


def test_model_exports_exactly_its_public_api() -> None:
    assert model.__doc__ and set(model.__all__) == MODEL_API
    for name in model.__all__:
        assert getattr(model, name) is not None, name
    from kimmy_swarm.model.optim import newton_schulz  # the pure function the issue names

    assert callable(newton_schulz)
    code = "import sys, kimmy_swarm.model, kimmy_swarm.cli.app; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]  # `kimmy` starts without torch; names load on use


REWARDS_API = {
    "SCHEMA_VERSION",
    "CompletionEnv",
    "EnvTaskError",
    "UnknownEnvError",
    "env_for",
    "register_env",
    "registered_envs",
    "score_completion",
    "CompletionGrader",
    "CriticalSteps",
    "Episode",
    "Grader",
    "GraderError",
    "Judgement",
    "ModelCall",
    "ModelJudge",
    "OrchestratorTurn",
    "PipelineGrader",
    "RewardBreakdown",
    "RewardConfigError",
    "RolloutRecord",
    "Schedule",
    "ToolUse",
    "Trajectory",
    "build_trajectory",
    "combine",
    "completion_reward",
    "critical_steps",
    "grader_for",
    "group_advantages",
    "instantiation_reward",
    "load_rollouts",
    "load_trajectory",
    "outputs_as",
    "score",
    "to_trl",
    "write_rollouts",
}


def test_rewards_exports_exactly_its_public_api() -> None:
    assert rewards.__doc__ and set(rewards.__all__) == REWARDS_API
    for name in rewards.__all__:
        assert getattr(rewards, name) is not None, f"rewards.{name}"
    code = (
        "import sys, kimmy_swarm.rewards; "
        "print(','.join(m for m in ('torch', 'pandas', 'numpy', 'agents', 'httpx') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""  # rewards never imports agents; nothing heavy


KERNELS_API = {"kda"}


def test_kernels_exports_exactly_its_public_api() -> None:
    assert kernels.__doc__ and set(kernels.__all__) == KERNELS_API
    code = "import sys, kimmy_swarm.kernels; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]  # kernels.kda (torch) loads on first use


def test_import_swarm_pulls_in_nothing_heavy() -> None:
    code = (
        "import sys, kimmy_swarm.swarm; "
        "print(','.join(m for m in ('torch', 'triton', 'ray', 'vllm', 'httpx', 'networkx', "
        "'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
