"""Judging on Ray Data: the same judging core, distributed by a Ray Data LLM pipeline.

Needs the ``ray`` extra (``pip install "langchain-tag[ray]"``); the core
never imports this package. The pipeline is Ray Data's own LLM processor
(:mod:`ray.data.llm`), with the package's pure judging core on each side:

1. **preprocess** (:func:`chat_request_body`): a
   :class:`~langchain_tag.judging._pairs.PairRequest` rendered by
   :func:`~langchain_tag.judging._pairs.render_pairs` becomes an OpenAI chat-completions
   request body: ``temperature=0``, ``logprobs=True``, ``top_logprobs=5`` and,
   for one-word verdicts, ``max_tokens=1``, as the in-process judge sends;
2. **the model calls**: the HTTP request processor
   (``HttpRequestProcessorConfig``) posts each body to any OpenAI-compatible
   ``/chat/completions`` endpoint (vLLM, llama.cpp, SGLang, OpenAI), with
   ``concurrency`` Ray actors each sending one batch of ``batch_size`` rows;
3. **postprocess** (:func:`read_chat_response`): each response is read with
   :func:`~langchain_tag.judging._read.read_reply` into the reply text, its
   first-token logprobs, P(YES), the YES/NO read and token counts, or a
   per-request error. That is the only read of the reply: the job keeps this
   reading, it does not read the reply again.

:func:`judge_with_ray` drives a whole job: it collects every request needed
(each input against each rule, both halves for a contrast prompt, and the
calibration's reference judgments once), skips those already in the verdict
cache, sends the rest through the pipeline with rows grouped input-major (an
input's requests are consecutive, so a server's prefix cache keeps the input
hot), keeps each reading in the verdict cache (as :meth:`ChatJudge.record
<langchain_tag.judging.chat.ChatJudge.record>` does) and returns each input's
:class:`~langchain_tag.judging.chat.MatchResult` from
:meth:`ApplicabilityRetriever.match
<langchain_tag.retrievers.ApplicabilityRetriever.match>`, which then finds
every verdict in the cache and makes no call. Verdicts, scores and
calibration are therefore those of in-process judging, for the same
replies: a server that answers one prompt slightly differently from run to
run does so in process too (llama.cpp's prompt cache moves P(YES) in the
second or third decimal; send ``{"cache_prompt": False}`` for replies that
repeat exactly).

A request that fails (an HTTP error, a connection error, a response or a
reply that cannot be read) does not stop the job: it is sent again in a
later pass, up to ``max_attempts`` passes as in process, then reported in
:attr:`RayJudgeRun.failures` and counted as NO in its input's result, with
the error, as a failed in-process judgment is.

Example, on one machine against the embedded model::

    from langchain_tag import ApplicabilityRetriever
    from langchain_tag.local import get_chat_model
    from langchain_tag.scale.ray_data import init_local_ray, judge_with_ray
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache

    judge_llm = get_chat_model(role="judge")
    retriever = ApplicabilityRetriever(llm=judge_llm, rules=rules, cache=SQLiteVerdictCache("verdicts.sqlite"))
    init_local_ray(num_cpus=2)
    run = judge_with_ray(retriever, inputs)  # endpoint and model read from judge_llm
    for result in run.results:
        print(result.query[:40], [j.rule_id for j in result.matched])
    print(run.failures)

On a cluster, connect first (``ray.init(address="auto")``) and install
``langchain-tag[ray]`` on the workers (for example with
``runtime_env={"pip": ["langchain-tag[ray]"]}``): the pre- and postprocess
steps run there. Pass ``base_url=`` and ``model=`` for an endpoint other than
the judge model's; it must serve the same model, since verdicts are cached
under the judge model's identity.

**vLLM engine on GPU clusters.** Instead of an HTTP endpoint, Ray Data can
run vLLM itself in its actors (``pip install "ray[llm]"``, which brings
vLLM): build the processor from ``vLLMEngineProcessorConfig`` and pass it as
``processor=``. Its rows carry ``messages`` and ``sampling_params`` in, and
``generated_text`` and per-token ``logprobs`` (``{token_id: {"logprob",
"rank", "decoded_token"}}``) out, so its postprocess must turn those into the
columns :func:`read_chat_response` gives (``text``, ``logprobs`` as the
OpenAI object in JSON, ``error``; ``p_yes`` and ``word`` left ``None``, the
job then reads the reply itself). A sketch (not run here: no GPU)::

    import json
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    config = vLLMEngineProcessorConfig(
        model_source="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        engine_kwargs={"enable_prefix_caching": True, "max_model_len": 8192},
        concurrency=4,  # engine replicas, one GPU each
        batch_size=64,
    )

    def preprocess(row):
        request = json.loads(row["request"])
        return {
            "messages": request["messages"],
            "sampling_params": {"temperature": 0, "max_tokens": 1, "logprobs": 5},
        }

    def postprocess(row):
        first = row["logprobs"][0]  # the first generated token's candidates
        top = sorted(first.values(), key=lambda c: c["rank"])[:5]
        logprobs = {"content": [{
            "token": row["generated_text"],
            "logprob": max(c["logprob"] for c in top),
            "top_logprobs": [{"token": c["decoded_token"], "logprob": c["logprob"]} for c in top],
        }]}
        return {
            **{k: row[k] for k in ("order", "key", "request")},
            "text": row["generated_text"], "logprobs": json.dumps(logprobs), "p_yes": None, "word": None,
            "prompt_tokens": row["num_input_tokens"], "completion_tokens": row["num_generated_tokens"],
            "error": "",
        }

    run = judge_with_ray(retriever, inputs, processor=build_processor(config, preprocess, postprocess))

For identical verdicts the in-process judge must then be the same model
served by vLLM (``ChatOpenAI(base_url=<vllm serve>/v1, model=...)``), so the
cache keys name the same model.
"""

from typing import TYPE_CHECKING

from langchain_tag.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tag.scale.ray_data.job import RayJudgeRun, RayRequestError, RayRequestFailure, judge_with_ray
    from langchain_tag.scale.ray_data.processor import ReplySession, build_judge_processor, init_local_ray
    from langchain_tag.scale.ray_data.requests import OUTPUT_COLUMNS, chat_request_body, read_chat_response

__all__ = [
    "OUTPUT_COLUMNS",
    "RayJudgeRun",
    "RayRequestError",
    "RayRequestFailure",
    "ReplySession",
    "build_judge_processor",
    "chat_request_body",
    "init_local_ray",
    "judge_with_ray",
    "read_chat_response",
]

_MODULES = {
    "OUTPUT_COLUMNS": "requests",
    "RayJudgeRun": "job",
    "RayRequestError": "job",
    "RayRequestFailure": "job",
    "ReplySession": "processor",
    "build_judge_processor": "processor",
    "chat_request_body": "requests",
    "init_local_ray": "processor",
    "judge_with_ray": "job",
    "read_chat_response": "requests",
}
"""Where each name lives, imported on first use: a Ray worker unpickling the pipeline's steps
(:mod:`~langchain_tag.scale.ray_data.requests`) imports neither the retriever nor the job."""


__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
