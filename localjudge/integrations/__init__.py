"""In-process adapters: localjudge judges and models inside other evaluation frameworks.

    from localjudge.integrations.mlflow import scorer            # MLflow 3 scorers        [mlflow]
    from localjudge.integrations.deepeval import LocalJudgeLLM   # a DeepEvalBaseLLM        [deepeval]
    from localjudge.integrations.ragas import LocalJudgeRagasLLM # an InstructorBaseRagasLLM [ragas]
    from localjudge.testing import assert_judge                  # pytest
    localjudge.evaluate(df, judges=[...])                        # pandas: DataFrame in, DataFrame out

Importing this package imports no framework: each submodule imports its framework when it is imported
itself, and a framework that is not installed is a one-line `MissingExtraError` naming the extra to
install. One model is loaded per process and shared by every adapter through one `EngineWorker`
(`common.shared_worker`), so the thread pools of MLflow, DeepEval and RAGAS batch their requests on it.
"""

from __future__ import annotations
