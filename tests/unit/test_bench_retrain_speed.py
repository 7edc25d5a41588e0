"""bench/retrain_speed.py's summary line: the retrain and serving figures against their targets."""

from __future__ import annotations

from bench.retrain_speed import summary


def run(wall_s: float, cpu_s: float, title: float) -> dict:
    return {"wall_s": wall_s, "cpu_s": cpu_s, "decision": "refused", "champion": {"title": 0.86},
            "challenger": {"title": title}}


def test_summary_says_whether_each_target_is_met() -> None:
    serving = {"idle_p50_ms": 10.0, "during_p50_ms": 12.0, "ratio": 1.2, "retrain_s": 150.0}
    line = summary(400, run(163.0, 179.0, 0.8558), run(387.0, 406.0, 0.8605), serving)
    assert line.startswith("SUMMARY retrain: 400 answers in 2.7 min wall (<= 4: yes), refused")
    assert "previous recipe 6.5 min (2.4x wall, 2.3x CPU)" in line
    assert "REST p50 idle 10.0 ms, during an app-started retrain 12.0 ms (1.20x, <= 2: yes; that retrain took 2.5 min)" in line
    slow = summary(400, run(300.0, 300.0, 0.85), None, serving | {"during_p50_ms": 25.0, "ratio": 2.5})
    assert "(<= 4: no)" in slow and "(2.50x, <= 2: no" in slow and "previous" not in slow
