"""The lab jobs' per-record work options (``--enrich-work``, ``--filter-work``): the same records, more CPU.

``benchmarks/fleet_lab.py`` makes IoT's Enrich and Nexmark's Filter Auctions cost CPU per record so that two jobs
planned alone oversubscribe a Pi; the work must not change what the operators emit (the plans' record sizes and
selectivities are profiled with it). Runs the compiled operators in a plain JVM against the wheel's Flink jars: no
cluster.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from placement.flink.home import find_flink_home
from support import real_parts

pytestmark = [
    pytest.mark.flink,
    real_parts.needs(None if shutil.which("javac") else "needs a JDK (javac not found on PATH)"),
]

HARNESS = """
import placement.lab.IotSensorJob;
import placement.lab.NexmarkBidsJob;

public class WorkHarness {
    public static void main(String[] args) throws Exception {
        int work = Integer.parseInt(args[0]);
        IotSensorJob.Enrich cheap = new IotSensorJob.Enrich(0), costly = new IotSensorJob.Enrich(work);
        NexmarkBidsJob.FilterAuctions keep = new NexmarkBidsJob.FilterAuctions(5, 0);
        NexmarkBidsJob.FilterAuctions keepCostly = new NexmarkBidsJob.FilterAuctions(5, work);
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long same = 0, kept = 0, cheapNs = 0, costlyNs = 0;
        for (int i = 0; i < 200; i++) {
            IotSensorJob.Reading r = new IotSensorJob.Reading();
            r.sensor = "sensor-" + i; r.site = i % 2 == 0 ? "plant-north" : "yard"; r.type = "temperature";
            r.ts = 1000L + i; r.value = 70.0 + i % 30; r.battery = 90; r.seq = i;
            long t0 = mx.getCurrentThreadCpuTime();
            IotSensorJob.Enriched a = cheap.map(r);
            long t1 = mx.getCurrentThreadCpuTime();
            IotSensorJob.Enriched b = costly.map(r);
            long t2 = mx.getCurrentThreadCpuTime();
            cheapNs += t1 - t0; costlyNs += t2 - t1;
            if (a.sensor.equals(b.sensor) && a.zone == b.zone && a.value == b.value && a.ts == b.ts) same++;
            NexmarkBidsJob.Bid bid = new NexmarkBidsJob.Bid();
            bid.auction = i; bid.bidder = 7L * i; bid.price = 100; bid.dateTime = 1000L + i;
            if (keep.filter(bid) == keepCostly.filter(bid)) kept++;
        }
        System.out.println(same + " " + kept + " " + cheapNs + " " + costlyNs);
    }
}
"""


def test_work_keeps_the_records_and_costs_cpu(tmp_path, lab_jobs_jar):
    home = find_flink_home()
    jar = lab_jobs_jar  # the product's build cache: the suite's other Flink tests build the same jar once
    (tmp_path / "WorkHarness.java").write_text(HARNESS)
    classpath = os.pathsep.join([str(jar), home.classpath])
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "WorkHarness.java")], check=True)
    out = subprocess.run(
        ["java", "-cp", os.pathsep.join([str(tmp_path), classpath]), "WorkHarness", "100000"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.split()
    same, kept, cheap_ns, costly_ns = (int(x) for x in out)
    assert same == 200 and kept == 200  # the work changes no record and no filter decision
    # 100,000 rounds of splitmix64 per record: tens of microseconds at least, far above the plain operator
    assert costly_ns > 200 * 20_000 and costly_ns > 5 * cheap_ns  # cheap_ns includes the first calls (class loading)


SHAPES_HARNESS = """
import placement.lab.IotSensorJob;

public class ShapesHarness {
    static double alarms(IotSensorJob.SensorGenerator g, int n) {
        int above = 0;
        for (long seq = 0; seq < n; seq++) {
            IotSensorJob.Reading r = IotSensorJob.parse(g.map(seq));
            if (r.value >= IotSensorJob.ALARM_THRESHOLD) above++;
            if (r.value < 0 || r.value >= 100) throw new IllegalStateException("value " + r.value);
        }
        return above / (double) n;
    }

    // as Flink ships a generator to a TaskManager: Java serialization (transient fields come back as defaults)
    static IotSensorJob.SensorGenerator shipped(IotSensorJob.SensorGenerator g) throws Exception {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
            out.writeObject(g);
        }
        try (java.io.ObjectInputStream in =
                new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray()))) {
            return (IotSensorJob.SensorGenerator) in.readObject();
        }
    }

    public static void main(String[] args) throws Exception {
        int n = 20000;
        double[] shares = {0.3, 0.1};
        IotSensorJob.SensorGenerator plain = shipped(new IotSensorJob.SensorGenerator(100, 0));
        IotSensorJob.SensorGenerator first = shipped(new IotSensorJob.SensorGenerator(100, 0, shares));
        IotSensorJob.SensorGenerator second = shipped(new IotSensorJob.SensorGenerator(100, 0, shares));
        IotSensorJob.SensorGenerator third = shipped(new IotSensorJob.SensorGenerator(100, 0, shares));
        plain.useSubtask(1);
        first.useSubtask(0);
        second.useSubtask(1);
        third.useSubtask(2);  // past the list: the last share
        IotSensorJob.SensorGenerator unshaped = new IotSensorJob.SensorGenerator(100, 0);
        int same = 0;
        for (long seq = 0; seq < 100; seq++) if (unshaped.map(seq).replaceAll("\\"ts\\":\\\\d+", "")
                .equals(plain.map(seq).replaceAll("\\"ts\\":\\\\d+", ""))) same++;
        IotSensorJob.Reading r = IotSensorJob.parse(plain.map(7L));
        IotSensorJob.Enriched bare = new IotSensorJob.Enrich(0).map(r);
        IotSensorJob.Enriched noted = new IotSensorJob.Enrich(0, 1377).map(r);
        boolean kept = bare.sensor.equals(noted.sensor) && bare.zone == noted.zone && bare.value == noted.value
                && bare.ts == noted.ts && bare.note == null;
        System.out.println(alarms(plain, n) + " " + alarms(first, n) + " " + alarms(second, n) + " "
                + alarms(third, n) + " " + same + " " + kept + " " + noted.note.length());
    }
}
"""


def test_alarm_shares_and_enrich_note_shape_the_records(tmp_path, lab_jobs_jar):
    """``--alarm-shares 0.3,0.1``: each source subtask's readings are alarms at its own share (the last share for
    the subtasks past the list), values still in [0, 100); without it the readings are the uniform ones, unchanged —
    also after the generator is serialized as Flink ships it (a transient field's initializer does not run then: a
    sentinel in one made every shipped generator shape its readings to 0 % alarms, and every IoT test job lost its
    alarms).
    ``--enrich-note N``: Enrich adds an N-character description and keeps every other field
    (benchmarks/latency_bound_lab.py makes Enrich grow rpi2's smaller stream with these)."""
    home = find_flink_home()
    classpath = os.pathsep.join([str(lab_jobs_jar), home.classpath])
    (tmp_path / "ShapesHarness.java").write_text(SHAPES_HARNESS)
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "ShapesHarness.java")], check=True)
    out = subprocess.run(
        ["java", "-cp", os.pathsep.join([str(tmp_path), classpath]), "ShapesHarness"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.split()
    plain, first, second, third = (float(x) for x in out[:4])
    assert abs(plain - 0.3) < 0.015  # uniform values: 30 % at or above 70
    assert abs(first - 0.3) < 0.015 and abs(second - 0.1) < 0.01 and abs(third - 0.1) < 0.01
    assert out[4] == "100"  # no shares: the same readings as before the option existed
    assert out[5] == "true" and out[6] == "1377"
