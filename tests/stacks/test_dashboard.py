"""The dashboard and the alarms beside the dead-letter alarms: in the example's templates, with the names the
naming module gives and the window of sleeper.dashboard.time.window.minutes."""

from __future__ import annotations

import json
from typing import Any

from sleeper.cdk.alarms import OLDEST_MESSAGE_ALARM_SECONDS, work_queues
from sleeper.core import naming, operations


def _body(synthesized: Any) -> str:
    (dashboard,) = [r for _, r in synthesized.resources("AWS::CloudWatch::Dashboard")]
    assert dashboard["Properties"]["DashboardName"] == naming.dashboard_name("example")
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else "?" for p in parts)


def should_show_every_table_metric_of_every_table_over_the_window(synthesized: Any) -> None:
    # When
    body = _body(synthesized)

    # Then each metric is a search over the instance's tables, with the default 5 minute window
    for metric in naming.TABLE_METRICS:
        assert f'MetricName=\\"{metric}\\" instanceId=\\"example\\"' in body
    assert "'Average', 300)" in body
    assert "RecordCount" in naming.TABLE_METRICS and "ActiveFileCount" in naming.TABLE_METRICS


def should_show_queues_functions_and_tasks(synthesized: Any) -> None:
    # When
    body = _body(synthesized)

    # Then
    assert naming.queue_name("example", operations.COMPACTION_JOB_Q) in body
    assert "ApproximateAgeOfOldestMessage" in body
    assert naming.function_name("example", "statestore-committer") in body
    assert '"Duration"' in body and '"Throttles"' in body
    assert naming.function_name("example", naming.COMPACTION_CLUSTER) in body
    assert naming.rule_name("example", naming.ECS_TASK_FAILURE_RULE) in body


def _alarms(synthesized: Any) -> list[dict[str, Any]]:
    return [r["Properties"] for name, r in synthesized.resources("AWS::CloudWatch::Alarm") if name == "Alarms"]


def should_alarm_on_every_functions_errors_and_throttles(synthesized: Any) -> None:
    # Given every function of the example
    functions = {r["Properties"]["FunctionName"] for _, r in synthesized.resources("AWS::Lambda::Function")
                 if isinstance(r["Properties"].get("FunctionName"), str)}  # fmt: skip

    # When the function alarms are read
    watched = set()
    for alarm in _alarms(synthesized):
        for query in alarm.get("Metrics", []):
            stat = query.get("MetricStat")
            if stat and stat["Metric"]["Namespace"] == "AWS/Lambda":
                watched.add(stat["Metric"]["Dimensions"][0]["Value"])
                assert stat["Metric"]["MetricName"] in ("Errors", "Throttles")

    # Then each function of ours is watched (CDK's own providers have no fixed name)
    assert functions and functions <= watched | {f for f in functions if not f.startswith("sleeper-example-")}
    assert naming.function_name("example", naming.TABLE_DEFINER_FUNCTION) in watched


def should_alarm_on_the_age_of_the_oldest_message_of_each_work_queue(synthesized: Any) -> None:
    # When
    ages = {
        alarm["Dimensions"][0]["Value"]: alarm["Threshold"]
        for alarm in _alarms(synthesized)
        if alarm.get("MetricName") == "ApproximateAgeOfOldestMessage"
    }

    # Then every deployed queue that something consumes is watched, and the query results queue is not
    assert naming.queue_name("example", operations.COMPACTION_JOB_Q) in ages
    assert naming.queue_name("example", operations.QUERY_RESULTS_Q) not in ages
    assert operations.QUERY_RESULTS_Q not in work_queues()
    assert set(ages.values()) == {OLDEST_MESSAGE_ALARM_SECONDS}
    assert len(ages) >= 15


def should_send_every_alarm_and_each_failed_task_to_the_errors_topic(synthesized: Any) -> None:
    # Given
    alarms = _alarms(synthesized)
    (rule,) = [r["Properties"] for name, r in synthesized.resources("AWS::Events::Rule") if name == "Alarms"]

    # Then
    assert alarms and all(len(a["AlarmActions"]) == 1 for a in alarms)
    assert rule["Name"] == naming.rule_name("example", naming.ECS_TASK_FAILURE_RULE)
    pattern = rule["EventPattern"]
    assert pattern["detail-type"] == ["ECS Task State Change"] and pattern["detail"]["lastStatus"] == ["STOPPED"]
    assert len(pattern["detail"]["clusterArn"]) == 2
    assert json.dumps(pattern).count("anything-but") == 1
    assert len(rule["Targets"]) == 1
