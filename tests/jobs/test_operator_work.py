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
from support import real_parts

from placement.flink.home import find_flink_home

pytestmark = [pytest.mark.flink, real_parts.needs(None if shutil.which("javac") else "needs a JDK (javac not found on PATH)")]

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
    out = subprocess.run(["java", "-cp", os.pathsep.join([str(tmp_path), classpath]), "WorkHarness", "100000"],
                         check=True, capture_output=True, text=True, timeout=120).stdout.split()
    same, kept, cheap_ns, costly_ns = (int(x) for x in out)
    assert same == 200 and kept == 200  # the work changes no record and no filter decision
    # 100,000 rounds of splitmix64 per record: tens of microseconds at least, far above the plain operator
    assert costly_ns > 200 * 20_000 and costly_ns > 5 * cheap_ns  # cheap_ns includes the first calls (class loading)
