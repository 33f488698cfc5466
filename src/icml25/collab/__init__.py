"""CollabLLM: multiturn-aware rewards, a robust user simulator, and training data from them.

Wu, Galley et al., "CollabLLM: From Passive Responders to Active Collaborators" (ICML 2025).
Every LLM call goes through the small async :class:`ChatModel` protocol (bounded concurrency,
timeouts, retries with back-off); :class:`MultiturnReward` scores candidate replies by forward
sampling with a :class:`UserSimulator` that never crashes a batch on bad output.

>>> import asyncio
>>> from icml25.collab import (Assistant, MultiturnReward, ScriptedChatModel, UserSimulator,
...                            math_task_metric)
>>> m = ScriptedChatModel({"user": '{"response": "[[TERMINATE CHAT]]"}',
...                        "assistant": "The answer is 4."})
>>> mr = MultiturnReward(UserSimulator(m, "arithmetic", "2+2=4"), Assistant(m),
...                      task_metric=math_task_metric("4"), window=1, n_samples=2)
>>> [round(s.mr, 4) for s in asyncio.run(mr.score(
...     [{"role": "user", "content": "2+2?"}], ["It is 4.", "It is 5."]))]
[0.998, -0.002]
"""

from icml25.collab.chat import (
    BaseChatModel,
    ChatModel,
    ChatModelError,
    ChatResult,
    GemmaChatModel,
    HFChatModel,
    OpenAIChatModel,
    RetryableError,
    RetryPolicy,
    ScriptedChatModel,
    approx_token_count,
    gemma_270m_path,
    load_chat_model,
    render_transcript,
)
from icml25.collab.dataset import (
    ScoredTurn,
    dpo_rows,
    read_jsonl,
    select_dpo_pair,
    sft_rows,
    write_jsonl,
)
from icml25.collab.engine import GrownConversation, grow_conversation, simulate_conversation
from icml25.collab.metrics import (
    AccuracyJudge,
    CodeResult,
    InteractivityJudge,
    LLMExtractor,
    bleu,
    code_pass_rate,
    extract_final_answer,
    last_code_block,
    math_equivalent,
    run_code_tests,
    token_counter,
)
from icml25.collab.parsing import extract_json_object, parse_score
from icml25.collab.reward import (
    PAPER_WEIGHTS,
    CandidateScore,
    MultiturnReward,
    SampleResult,
    bleu_task_metric,
    code_task_metric,
    math_task_metric,
    paper_reward,
    weighted_reward,
)
from icml25.collab.simulator import (
    PROACTIVE_SYSTEM_PROMPT,
    TERMINATION_SIGNAL,
    Assistant,
    UserSimulator,
    UserTurn,
)
from icml25.collab.tasks import builtin_tasks, load_tasks_jsonl

__all__ = [
    "PAPER_WEIGHTS",
    "PROACTIVE_SYSTEM_PROMPT",
    "TERMINATION_SIGNAL",
    "AccuracyJudge",
    "Assistant",
    "BaseChatModel",
    "CandidateScore",
    "ChatModel",
    "ChatModelError",
    "ChatResult",
    "GemmaChatModel",
    "GrownConversation",
    "HFChatModel",
    "CodeResult",
    "InteractivityJudge",
    "LLMExtractor",
    "MultiturnReward",
    "OpenAIChatModel",
    "RetryPolicy",
    "RetryableError",
    "SampleResult",
    "ScoredTurn",
    "ScriptedChatModel",
    "UserSimulator",
    "UserTurn",
    "approx_token_count",
    "bleu",
    "bleu_task_metric",
    "builtin_tasks",
    "code_pass_rate",
    "code_task_metric",
    "dpo_rows",
    "extract_final_answer",
    "extract_json_object",
    "gemma_270m_path",
    "grow_conversation",
    "last_code_block",
    "load_chat_model",
    "load_tasks_jsonl",
    "math_equivalent",
    "math_task_metric",
    "paper_reward",
    "parse_score",
    "read_jsonl",
    "render_transcript",
    "run_code_tests",
    "select_dpo_pair",
    "sft_rows",
    "simulate_conversation",
    "token_counter",
    "weighted_reward",
    "write_jsonl",
]
