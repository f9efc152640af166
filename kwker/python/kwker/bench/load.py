"""How busy the machine was with *other* processes while the benchmark ran.

On a 2-core machine another process at 100 % halves what a 2-thread call can get, so the
report states it instead of letting it pass silently. Linux only (/proc/stat); elsewhere the
figures are None.
"""
import os
import resource
import time


def _machine_busy_s():
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)      # idle + iowait
    steal = fields[7] if len(fields) > 7 else 0
    return (sum(fields[:8]) - idle - steal) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class LoadMeter:
    def __init__(self):
        self.t0 = time.perf_counter()
        self.busy0 = _machine_busy_s()
        self.own0 = _own_cpu_s()
        self.loadavg_start = _loadavg()

    def report(self):
        wall = time.perf_counter() - self.t0
        busy1 = _machine_busy_s()
        out = {"loadavg_1min_start": self.loadavg_start, "loadavg_1min_end": _loadavg(),
               "wall_s": wall, "other_cpu_s": None, "other_cpu_fraction": None}
        if self.busy0 is not None and busy1 is not None and wall > 0:
            other = max(0.0, (busy1 - self.busy0) - (_own_cpu_s() - self.own0))
            out["other_cpu_s"] = other
            out["other_cpu_fraction"] = other / (wall * (os.cpu_count() or 1))
        return out


def _loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None
