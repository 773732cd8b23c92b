"""One shard of a vla-eval evaluation, run by vla-eval's own Orchestrator against a model
server (vla-eval's PredictModelServer, served by its serve_async on 127.0.0.1) in the same
process:

    python vla_eval_shard.py OUTPUT_DIR EVAL_ID SHARD_ID NUM_SHARDS [CRASH_AFTER]

The benchmark has two tasks of three episodes; an episode succeeds when its index is even,
episode 2 of task 0 raises in the simulator (an ``error`` episode), and with CRASH_AFTER the
process dies (``os._exit``) when it resets its episode number CRASH_AFTER + 1, as a killed
shard does: the work item it had claimed is never finished.
"""
from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import numpy as np
from vla_eval.benchmarks.base import StepBenchmark, StepResult
from vla_eval.model_servers.predict import PredictModelServer
from vla_eval.specs import IMAGE_RGB, LANGUAGE, POSITION_DELTA

STEPS = 3


class CountingBenchmark(StepBenchmark):
    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = seed
        self.started = 0
        self.t = 0

    def get_tasks(self) -> list[dict[str, Any]]:
        return [{"name": "reach-left", "suite": "test"}, {"name": "reach-right", "suite": "test"}]

    def reset(self, task: dict[str, Any]) -> Any:
        crash_after = os.environ.get("SHARD_CRASH_AFTER")
        if crash_after is not None and self.started >= int(crash_after):
            os._exit(3)
        self.started += 1
        self.t = 0
        return 0

    def step(self, action: dict[str, Any]) -> StepResult:
        task = self._task
        if task["name"] == "reach-left" and task["episode_idx"] == 2:
            raise RuntimeError("simulator lost contact")
        self.t += 1
        self._recorder.record_step(action=np.asarray(action["actions"]).tolist(), t=self.t)
        done = self.t >= STEPS
        return StepResult(obs=self.t, reward=0.0, done=done,
                          info={"success": done and task["episode_idx"] % 2 == 0})

    def make_obs(self, raw_obs: Any, task: dict[str, Any]) -> dict[str, Any]:
        return {"images": {"front": np.zeros((4, 4, 3), np.uint8)}, "task_description": task["name"]}

    def get_step_result(self, step_result: StepResult) -> dict[str, Any]:
        return {"success": bool(step_result.info.get("success", False))}

    def get_action_spec(self) -> dict[str, Any]:
        return {"position": POSITION_DELTA}

    def get_observation_spec(self) -> dict[str, Any]:
        return {"front": IMAGE_RGB, "language": LANGUAGE}


class ZeroModel(PredictModelServer):
    def predict(self, obs: Any, ctx: Any) -> dict[str, Any]:
        return {"actions": np.zeros(3, dtype=np.float32)}

    def get_action_spec(self) -> dict[str, Any]:
        return {"position": POSITION_DELTA}

    def get_observation_spec(self) -> dict[str, Any]:
        return {"front": IMAGE_RGB, "language": LANGUAGE}


async def main(out: str, eval_id: str, shard: int, shards: int) -> None:
    import anyio
    from vla_eval.model_servers.serve import serve_async
    from vla_eval.orchestrator import Orchestrator

    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_async, ZeroModel(), "127.0.0.1", 0)
        config = {"server": {"url": f"ws://127.0.0.1:{port}", "timeout": 30}, "output_dir": out,
                  "benchmarks": [{"benchmark": f"{__name__}:CountingBenchmark", "episodes_per_task": 3,
                                  "max_steps": 10, "params": {"seed": 7}}]}
        await Orchestrator(config, shard_id=shard, num_shards=shards, eval_id=eval_id).run()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    if len(sys.argv) > 5:
        os.environ["SHARD_CRASH_AFTER"] = sys.argv[5]
    sys.path.insert(0, os.path.dirname(__file__))
    __name__ = "vla_eval_shard"  # noqa: A001 - the import string vla-eval resolves
    import vla_eval_shard as module

    asyncio.run(module.main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
