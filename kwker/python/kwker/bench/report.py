"""Markdown rendering and the targets summary of a kwker.bench result."""
from . import cases, contention, cpu_backend


def summary(rows):
    native = [r for r in rows if r["baseline"] == "native" and r["target"] is not None]
    avx2 = [r for r in rows if r["baseline"] == "avx2-only" and r["target"] is not None]
    return {
        "targets_met": sum(r["passed"] for r in native),
        "targets_total": len(native),
        "avx2_targets_met": sum(r["passed"] for r in avx2),
        "avx2_targets_total": len(avx2),
    }


def fmt_time(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_time_el(s, n):
    return f"{fmt_time(s)} ({s / n * 1e9:.3g} ns/el)" if n else fmt_time(s)


def fmt_ratio(x):
    return f"{x:.2f}x"


def header(env):
    simd = env.get("numpy_simd", {})
    found = simd.get("dispatch_found")
    numpy = f"NumPy {env['numpy']}"
    if found is not None:
        avx512 = "AVX-512" if simd.get("X86_V4") else "AVX2"
        numpy += f" (np.sort dispatch: {avx512}; SIMD targets found: {', '.join(found)})"
    opt = env.get("optional_modules", {})
    torch = f"torch {env['torch']}" if env.get("torch") else f"torch: {opt.get('torch')}"
    polars = (f"Polars {env['polars']} (pool {env.get('polars_threads')} threads)"
              if env.get("polars") else f"Polars: {opt.get('polars')}")
    libs = "; ".join(f"{k} sha256 {v['sha256_12']} built {v['mtime']}"
                     for k, v in (env.get("binaries") or {}).items())
    libs = f" · binaries: {libs}" if libs else ""
    hv = env.get("held")
    if hv:
        libs += (f" · **held to {hv['isa']}**: kwker engine `{hv['kwker_engine']}`, NumPy "
                 f"{'AVX-512' if hv['numpy_avx512'] else 'without AVX-512'} (dispatch found: "
                 f"{', '.join(hv.get('numpy_dispatch_found') or [])}), torch CPU capability "
                 f"{hv.get('torch_cpu_capability')} (oneDNN / MKL: "
                 f"{', '.join(f'{k}={v}' for k, v in (hv.get('torch_libraries') or {}).items())}"
                 f"); not held: {'; '.join(hv['not_held'])}")
    return (f"**Machine:** {env.get('cpu_brand')} ({env.get('cpu_vendor')}), "
            f"{env.get('logical_cpus')} logical CPUs · **kwker** {env['kwker_version']}, "
            f"engine `{env['engine']}` (engines: {', '.join(env['engines'])}), backend "
            f"`{env.get('backend')}`, thread budget **{env['threads_budget']}** · {numpy} · "
            f"{torch} · {polars} · Python {env['python']}{libs}")


def sizes_line(env):
    s = env["sizes"]
    line = (f"Sizes: n = {s['n']:,} for 1-D rows, matrix {s['rows']:,} x {s['cols']:,}, "
            f"{s['segments']:,} ragged segments, small = {s['small']:,}; "
            f"{s['repeats']} interleaved repeats per row ({s['slow_repeats']} for the slow "
            f"rows) unless --repeats is given.")
    if env.get("reduced_sizes"):
        line = (f"**NOTE: --{env['preset']} run: sizes are REDUCED** (the targets were set "
                f"for n = 10,000,000 and a 10,000 x 1,000 matrix). " + line)
    return line


def load_line(env):
    ld = env.get("other_load") or {}
    frac = ld.get("other_cpu_fraction")
    if frac is None:
        return ""
    line = (f"Other processes used {ld['other_cpu_s']:.1f} CPU-s during the "
            f"{ld['wall_s']:.0f} s run ({frac:.0%} of the machine's "
            f"{env.get('logical_cpus')} CPUs; 1-min load average {ld['loadavg_1min_start']:.2f} "
            f"at start, {ld['loadavg_1min_end']:.2f} at end).")
    if frac > 0.05:
        line = ("**WARNING: the machine was not idle.** " + line +
                " Rows that use 2 threads (and parallel competitors) are affected most; "
                "interleaving spreads the disturbance over both sides but does not remove it.")
    return line


METHOD = (
    "Ratio = competitor time / kwker time, so **> 1 means kwker is faster**. Each row times "
    "kwker and its competitor(s) in the same run, interleaved (k, c, k, c, ...; a case with "
    "two competitors runs k, c1, c2, ...), after one warm-up call each, with gc.collect() "
    "before and gc disabled during every sample; calls shorter than the minimum sample time "
    "are looped. *ratio* is the median of the per-repeat ratios, *spread* their min–max; the "
    "times are per-call medians. Every timed call returns a new array.")


def table(rows):
    out = ["| row | n | compared: kwker vs competitor | kwker | competitor | ratio | "
           "spread | target | result |",
           "|---|---:|---|---:|---:|---:|---|---:|---|"]
    for r in rows:
        n = f"{r['n']:,}" + (f" ({r['shape']})" if r.get("shape") else "")
        target = "—" if r["target"] is None else f"≥ {r['target']:g}x"
        result = "info" if r["passed"] is None else ("PASS" if r["passed"] else "**MISS**")
        out.append(
            f"| `{r['name']}` | {n} | `{r['kwker']}` vs `{r['competitor_desc']}` | "
            f"{fmt_time_el(r['kwker_s'], r['n'])} | {fmt_time_el(r['competitor_s'], r['n'])} | "
            f"**{fmt_ratio(r['ratio_median'])}** | "
            f"{fmt_ratio(r['ratio_min'])}–{fmt_ratio(r['ratio_max'])} | {target} | {result} |")
    return "\n".join(out)


def avx2_intro(info):
    if not info:
        return ""
    if "skipped" in info:
        return f"Not run ({info['skipped']})."
    if "error" in info:
        return f"Not run: {info['error']}"
    return (
        "Competitor: np.sort in a **child process started with "
        f"`NPY_DISABLE_CPU_FEATURES=\"{info.get('NPY_DISABLE_CPU_FEATURES')}\"`**; there NumPy "
        f"reports SIMD dispatch targets found: {', '.join(info.get('dispatch_found', []))}; "
        f"not found: {', '.join(info.get('dispatch_not_found', []))} (X86_V4="
        f"{info.get('X86_V4')}, AVX512_SKX={info.get('AVX512_SKX')}; the raw AVX512F CPU flag "
        f"stays {info.get('AVX512F_cpu_flag')} in `__cpu_features__` because it is not a "
        "dispatch target, but no AVX-512 sort kernel is dispatched). kwker: the same call in "
        "this process under **`kwker.config(isa=\"avx2\")`**. The child rebuilds the same "
        "inputs from the same seeds and times its own calls; the parent alternates kwker "
        "samples with child samples.")


def overhead_intro(o):
    """The per-call cost of each backend, measured in this run (kwker._overhead)."""
    if not o:
        return ""
    def us(s):
        return "not loadable here" if s is None else f"{s * 1e6:.2f} µs"
    return (f"Per-call cost of `kwker.sort` on {o['elements']} float64 elements in this run: "
            f"fast path (`_fast`) {us(o.get('fast'))}, ctypes backend {us(o.get('ctypes'))}; "
            f"`np.sort` {us(o.get('numpy'))} (best of 5 batches of 400 calls).")


def markdown(result):
    env = result["environment"]
    rows = result["rows"]
    lines = [f"# Kwker benchmark ({env['preset']})", "", header(env), "", sizes_line(env), "",
             METHOD, ""]
    if load_line(env):
        lines[-1:-1] = ["", load_line(env)]
    for key, title in cases.SECTIONS.items():
        sec = [r for r in rows if r["section"] == key]
        skipped = [s for s in result["skipped"]
                   if (key == "8") == s["name"].startswith("avx2/")
                   and (key == "8" or _section_of(s["name"]) == key)]
        intro = (avx2_intro(env.get("avx2_baseline")) if key == "8" else
                 overhead_intro(env.get("call_overhead")) if key == "11" else
                 cpu_backend.intro(env.get("cpu_backend")) if key == "14" else
                 contention.intro(env.get("contention")) if key == "15" else "")
        if not sec and not skipped and not intro:
            continue
        lines += [f"## {title}", ""]
        if intro:
            lines += [intro, ""]
        if sec:
            lines += [table(sec), ""]
        for s in skipped:
            lines.append(f"- skipped `{s['name']}`: {s['reason']}")
        if skipped:
            lines.append("")
    if result.get("before"):
        lines += before_section(result["before"]) + [""]
    sm = result["summary"]
    lines.append(f"targets: {sm['targets_met']} of {sm['targets_total']} met")
    if sm["avx2_targets_total"]:
        lines.append(f"targets vs np.sort AVX2-only baseline (kwker avx2 engine): "
                     f"{sm['avx2_targets_met']} of {sm['avx2_targets_total']} met")
    if result.get("before"):
        lines.append(before_line(result["before"]))
    lines.append(f"wall time: {result['wall_s']:.1f} s")
    if load_line(env):
        lines.append(load_line(env))
    return "\n".join(lines)


def before_line(b):
    sm = b["summary"]
    if not sm["cases"]:
        return "before / after: no case ran"
    slower = ", ".join(f"`{n}`" for n in sm["slower"]) or "none"
    return (f"before / after: {sm['cases']} cases, geometric mean {sm['geomean']:.3f}x; "
            f"slower now (below {b['no_slower']:g}x): {slower}")


def before_section(b):
    """Each case's kwker call with the --before library vs this build, in one process."""
    info = b["info"]
    lines = ["## Before and after: the same kwker calls with another libkwker", "",
             f"Before: `{b['library']}` (libkwker {info.get('version')}, engine "
             f"`{info.get('engine')}`); after: `{b['after_library']}`. Both sides run this "
             "checkout's Python code through the ctypes backend, in this process, on the same "
             "arrays, in the same interleaved repeats as the case's rows (their order swapped "
             "every repeat). *speed-up* = before time / after time, the median over pairs of "
             "repeats of their geometric mean (each pair holds both orders; > 1: faster now); "
             "a case is slower now below "
             f"{b['no_slower']:g}x. The AVX2-only and CPU-backend sections are not compared.",
             "", "| case | n | kwker call | before | after | speed-up | spread | |",
             "|---|---:|---|---:|---:|---:|---|---|"]
    for r in b["rows"]:
        n = f"{r['n']:,}" + (f" ({r['shape']})" if r.get("shape") else "")
        lines.append(
            f"| `{r['name']}` | {n} | `{r['kwker']}` | {fmt_time_el(r['before_s'], r['n'])} | "
            f"{fmt_time_el(r['after_s'], r['n'])} | **{fmt_ratio(r['ratio_median'])}** | "
            f"{fmt_ratio(r['ratio_min'])}–{fmt_ratio(r['ratio_max'])} | "
            f"{'**slower**' if r['slower'] else ''} |")
    if b.get("not_compared"):
        lines += ["", "Not compared (the call did not reach the --before library: the "
                  "compiled PyTorch operators link this build's library themselves, and Dask's "
                  "workers are processes of their own): "
                  + ", ".join(f"`{n}`" for n in b["not_compared"])]
    if b.get("not_compared_missing"):
        lines += ["", "Not compared (the --before library has no C function the call needs: a "
                  "build older than this C API): "
                  + ", ".join(f"`{m['case']}` (`{m['function']}`)"
                              for m in b["not_compared_missing"])]
    lines += ["", before_line(b)]
    return lines


def _section_of(name):
    if name.startswith("cpu_backend"):
        return cpu_backend.SECTION
    if name.startswith("contention"):
        return contention.SECTION
    case_id = name.split(" vs ")[0]
    for case in cases.all_cases():
        if case.id == case_id:
            return case.section
    return None
