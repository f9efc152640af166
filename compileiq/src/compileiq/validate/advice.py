"""What to do when a validation cannot decide, fitted to what was measured: the device and the machine's load.

GPU advice (lock the clocks, pin one GPU) means nothing to a GCC benchmark on a CPU, and the first
question on a shared CPU machine is how busy the other processes kept it, which validate measures
(validate/machine.py). The device comes from validate/device.py; unknown gets both, labelled.
"""

from __future__ import annotations

from .machine import MachineLoad, governor

BUSY_SHARE = 0.10  # other processes above this share of the CPU time are worth naming as a cause

GPU_NOISE = (
    "lock the GPU and memory clocks: sudo nvidia-smi -pm 1; sudo nvidia-smi --lock-gpu-clocks=<MHz>,<MHz>; "
    "sudo nvidia-smi --lock-memory-clocks=<MHz>,<MHz> (undo with --reset-gpu-clocks / --reset-memory-clocks)",
    "pin one GPU and keep other jobs off it: CUDA_VISIBLE_DEVICES=<index>; watch it with nvidia-smi dmon",
)
CPU_PIN = ("pin the benchmark to one core that nothing else uses: taskset -c <core> <command> "
           "(compileiq.compilers.cpu_time pins each run to the core it starts on); on a machine you control, keep "
           "other jobs on the other cores")
MORE_TRIALS = {
    "cv": "raise the warm-up (--warmup 100 or more) and the trials (--trials 200) so caches and clocks settle",
    "ratio_ci": "more pairs narrow the speed-up's interval: raise max_trials (--max-trials; each look adds "
                "--trials pairs); inside the benchmark, report the best or the median of several repetitions",
}
DECLARE = ("declare where the benchmark runs (validate(..., device='cpu' | 'gpu'), --device cpu | gpu) to get "
           "only the advice that fits it")


def load_line(load: MachineLoad | None) -> str:
    if load is None:
        return ("the machine's load was not measured (validate() measures it from /proc/stat on Linux): check with "
                "top that nothing else runs while measuring")
    if load.others_share >= BUSY_SHARE:
        return (f"{load.sentence()}: they share the cores, caches and memory bandwidth with the benchmark. Stop "
                "them or validate when the machine is quiet (ps -eo pid,pcpu,comm --sort=-pcpu | head lists them)")
    return f"{load.sentence()}: other jobs are not the main cause; the benchmark's own variation is"


def _cpu_items(load: MachineLoad | None) -> list[str]:
    items = [CPU_PIN]
    gov = load.governor if load is not None else governor()
    if gov is None:
        items.append("no cpufreq governor is visible here (a VM or a container), so the host sets the clock: on a "
                     "machine you control, sudo cpupower frequency-set -g performance keeps it steady")
    elif gov != "performance":
        items.append(f"stop frequency scaling: the cpufreq governor is '{gov}'; sudo cpupower frequency-set -g "
                     f"performance keeps the clock steady (undo with -g {gov})")
    if load is not None and load.steal >= 0.02:
        items.append(f"the hypervisor withheld {load.steal:.0%} of the CPU time (steal): this VM shares its physical "
                     "cores; one with dedicated vCPUs measures more steadily")
    return items


def noise_advice(device: str | None, load: MachineLoad | None, noise_rule: str = "ratio_ci") -> tuple[str, ...]:
    """Fixes, in order, for a validation too noisy to decide (REJECTED:noisy or UNDECIDED)."""
    more = MORE_TRIALS.get(noise_rule, MORE_TRIALS["cv"])
    if device == "cpu":
        return (load_line(load), *_cpu_items(load), more)
    if device == "gpu":
        host = [load_line(load)] if load is not None and load.others_share >= BUSY_SHARE else []
        return (*GPU_NOISE, more, *host)
    return (*GPU_NOISE, more, *(f"CPU benchmarks: {a}" for a in (load_line(load), *_cpu_items(load))), DECLARE)


def spread_advice(device: str | None) -> tuple[str, ...]:
    where = {"cpu": "the benchmark pinned to an idle core", "gpu": "a dedicated GPU"}.get(
        device, "the benchmark pinned to an idle core or a dedicated GPU")
    return (
        f"a wider spread means less predictable runs: re-validate on a quiet machine (nothing else running, {where}) "
        "and with more trials; if it persists, ship only if the worst case matters less than the mean",
        "kernels that become memory-bound pick up the noise of the shared caches and memory: the relative rule "
        "(--spread-rule relative, the default) judges that fairly; --spread-rule absolute is NVIDIA's stricter rule",
    )


def advice_for(reasons: tuple[str, ...], device: str | None, load: MachineLoad | None,
               noise_rule: str) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    if "noisy" in reasons or "uncertain" in reasons:
        out += noise_advice(device, load, noise_rule)
    if "wider-spread" in reasons:
        out += spread_advice(device)
    return out
