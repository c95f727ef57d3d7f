"""Drive the served TAG graph with langgraph-sdk: stream a run, review its rules, read the output."""

import asyncio
import os

from langgraph_sdk import get_client

CODE = "def add_tag(tag, tags=[]):\n    try:\n        tags.append(tag)\n    except:\n        pass\n    return tags"


async def main() -> None:
    """Run the graph on CODE with review on, approve the matched rules, print what the executor wrote."""
    client = get_client(url=os.environ.get("LANGGRAPH_URL", "http://127.0.0.1:2024"))
    thread_id = (await client.threads.create())["thread_id"]
    context = {"review": True, "executor": "code_review"}  # also: mode, threshold, rules_file, judge_model, ...
    async for part in client.runs.stream(
        thread_id, "tag", input={"input": CODE}, context=context, stream_mode=["updates", "custom"]
    ):
        if part.event == "custom":  # judging progress
            done = part.data
            print(f"{done['stage']}: {done['judged']}/{done['total']} judged, {done['matched']} matched")
        elif part.event == "updates" and "__interrupt__" in part.data:  # the review
            review = part.data["__interrupt__"][0]["value"]
            print("matched:", [(r["rule_id"], round(r["score"], 2)) for r in review["matched"]])
            print("closest below the line:", [(r["rule_id"], round(r["score"], 2)) for r in review["below"]])
    # Approve as matched; or {"rule_ids": [...]} for exactly these, {"drop": [...], "add": [...]} for changes.
    decision = {"drop": [], "add": [], "reviewer": "you"}
    result = await client.runs.wait(thread_id, "tag", command={"resume": decision})
    print("executor got:", [r["rule_id"] for r in result["matched"]], "in", result["rounds"], "round(s)")
    print("still breaks:", [r["rule_id"] for r in result["findings"]])
    print(result["output"])


asyncio.run(main())
