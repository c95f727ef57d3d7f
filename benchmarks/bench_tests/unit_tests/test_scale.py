"""The scale benchmark's server-pace row posts every request of the job, as the engines send them."""

from __future__ import annotations

import argparse

import pytest_socket
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag_bench.overhead import InstantEndpoint
from langchain_tag_bench.scale import agreement, run_bare_client


def test_bare_client_posts_every_judgment_of_the_job(rules: list[Rule]) -> None:
    pytest_socket.enable_socket()  # loopback only, for the endpoint this test starts
    pytest_socket.socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)
    endpoint = InstantEndpoint()
    try:
        judge = ChatOpenAI(base_url=endpoint.base_url, model="instant", api_key=SecretStr("none"), max_retries=0)
        retriever = ApplicabilityRetriever(llm=judge, rules=rules, calibration=None)
        inputs = ["from os import *", "def f(x=[]):\n    return x"]
        timing = run_bare_client(retriever, inputs, argparse.Namespace(base_url=None, model=None))
        assert timing.judgments == len(inputs) * len(rules)
        assert timing.seconds > 0 and timing.per_second > 0
        # The same job in process gives one result per input, and agrees with itself pair for pair.
        results = [retriever.match(q) for q in inputs]
        agreed = agreement(results, results)
        assert (agreed.pairs, agreed.same_verdict, agreed.max_p_yes_gap) == (10, 10, 0.0)
    finally:
        endpoint.close()
