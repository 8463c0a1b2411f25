"""From bench/run's raw results to the rows of the results table (medians,
ratio torchrun/faultline, goal met or missed), the scaling table with the
growth per rank, and the micro-benchmark table; rendered as Markdown."""
import statistics


def med(xs):
    xs = [x for x in (xs or []) if x is not None]
    return statistics.median(xs) if xs else None


def col(reps, key):
    return med([r.get(key) for r in reps])


def fmt(x, digits=None):
    if x is None:
        return "-"
    if digits is None:
        digits = 2 if abs(x) < 10 else 1 if abs(x) < 1000 else 0
    return f"{x:.{digits}f}"


def slope(points):
    """Least-squares slope and intercept of (x, y) points; None with < 2 points."""
    pts = [(x, y) for x, y in points if y is not None]
    if len(pts) < 2:
        return None, None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None, None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return b, my - b * mx


class Row:
    def __init__(self, measure, fl, tr=None, unit="ms", goal=None, goal_max=None, reps=None, note=""):
        self.measure, self.fl, self.tr, self.unit = measure, fl, tr, unit
        self.goal, self.goal_max, self.reps, self.note = goal, goal_max, reps, note

    def ratio(self):
        if self.fl is None or self.tr is None or self.fl <= 0:
            return None
        return self.tr / self.fl

    def goal_text(self):
        if not self.goal:
            return ""
        if self.goal_max is None or self.fl is None:
            return self.goal
        return f"{self.goal}: {'met' if self.fl <= self.goal_max else 'MISSED'}"

    def as_dict(self):
        return {"measure": self.measure, "faultline": self.fl, "torchrun": self.tr, "unit": self.unit,
                "ratio": self.ratio(), "goal": self.goal, "goal_max": self.goal_max,
                "goal_met": None if self.goal_max is None or self.fl is None else self.fl <= self.goal_max,
                "reps": self.reps, "note": self.note}


def result_rows(r):
    """The side-by-side table, from whichever sections were run."""
    rows = []
    if "crash" in r:
        c = r["crash"]
        fl, tr, n = c["faultline"], c["torchrun"], len(c["faultline"])
        rows += [
            Row("crash detection: rank exit -> supervisor noticed", col(fl, "detect_ms"), None, goal="<= 10 ms",
                goal_max=10, reps=n, note="torchrun has no observable moment; it polls every 5 s (monitor_interval)"),
            Row("first failure -> SIGTERM reaches the other ranks", col(fl, "term_delivered_ms"),
                col(tr, "term_delivered_ms"), reps=n),
            Row("first failure -> all ranks reaped, cooperative ranks", col(fl, "all_reaped_ms"),
                col(tr, "all_reaped_ms"), goal="<= 500 ms", goal_max=500, reps=n,
                note="/proc polled every 1 ms; faultline's own record: %s ms" % fmt(col(fl, "all_reaped_record_ms"))),
            Row("first failure -> launcher returned (faultline: report written, diagnosed)",
                col(fl, "launcher_returned_ms"), col(tr, "launcher_returned_ms"), reps=n),
        ]
    if "term_ignoring" in r:
        c = r["term_ignoring"]
        g = c["grace_s"]
        rows.append(Row(f"first failure -> all reaped, one SIGTERM-ignoring rank (faultline --grace {g})",
                        col(c["faultline"], "all_reaped_ms"), col(c["torchrun"], "all_reaped_ms"),
                        goal=f"<= grace + 100 ms", goal_max=g * 1000 + 100, reps=len(c["faultline"]),
                        note="torchrun waits a fixed 30 s before SIGKILL"))
    if "hang" in r:
        c = r["hang"]
        rows.append(Row(f"hang -> report naming the laggard rank (faultline --hang-timeout {c['hang_timeout_s']}) "
                        f"vs torchrun ending the job (Gloo timeout {c['collective_timeout_s']} s)",
                        col(c["faultline"], "report_ms"), col(c["torchrun"], "ended_ms"), reps=len(c["faultline"]),
                        note="reference trainer, %d ranks, hung_collective at rank 1, timed from its fault event; "
                             "faultline detected the hang after %s ms, then took native stacks of the stuck ranks with %s (cut "
                             "off at 5 s in %d of %d); laggard named in %d of %d"
                             % (c["world"], fmt(col(c["faultline"], "detected_ms")),
                                "/".join(sorted({x.get("stack_tool") or "gdb" for x in c["faultline"]})),
                                sum(1 for x in c["faultline"] if x.get("gdb_cut_off")), len(c["faultline"]),
                                sum(1 for x in c["faultline"] if x["report_ms"] is not None), len(c["faultline"]))))
    if "launch" in r:
        c = r["launch"]
        if c.get("started_faultline"):
            rows.append(Row("launch: process start -> all 8 ranks running (fl_hostile stamps)",
                            med(c["started_faultline"]), med(c["started_torchrun"]), goal="<= 30 ms", goal_max=30,
                            reps=len(c["started_faultline"]),
                            note="with --no-instrument %s ms; floor: the 8 ranks posix_spawn'd from Python = %s ms"
                                 % (fmt(med(c.get("started_faultline_no_instrument"))),
                                    fmt(med(c.get("started_floor"))))))
        rows.append(
            Row("launch + supervise + reap 8 ranks of /bin/true, whole `faultline exec` process (diagnosis and 5 "
                "report files included)", med(c["faultline"]), med(c["torchrun"]), reps=len(c["faultline"]),
                note="faultline process CPU %s ms; with --no-instrument %s ms; floor: posix_spawn x 8 + waitpid "
                     "from Python = %s ms" % (fmt(med(c.get("faultline_cpu"))), fmt(med(c.get("faultline_no_instrument"))),
                                              fmt(med(c["floor"])))))
        if c.get("in_process_ms") is not None:
            rows.append(Row("the same in process (harness_bench BM_LaunchAndReap/8)", c["in_process_ms"],
                            goal="<= 30 ms", goal_max=30, reps=c.get("in_process_reps"),
                            note="harness CPU %s ms" % fmt(c.get("in_process_cpu_ms"))))
    if "idle" in r:
        c = r["idle"]
        rows.append(Row("supervisor CPU, 64 idle ranks", med(c["faultline"]), med(c["torchrun"]), unit="% of a core",
                        goal="< 2 %", goal_max=2, reps=len(c["faultline"]), note="2 s windows, schedstat ns"))
    if "scale" in r and 64 in r["scale"]["faultline"]:
        s = r["scale"]
        fl64 = s["faultline"][64]
        tr64 = s["torchrun"].get(64, {})
        rows.append(Row("supervisor CPU over a whole 64-rank reference-trainer run", fl64.get("harness_cpu_pct"),
                        tr64.get("harness_cpu_pct"), unit="% of a core", goal="< 2 %", goal_max=2, reps=1,
                        note="own CPU time / wall time, start-up, teardown and diagnosis included"))
    if "diagnose" in r:
        c = r["diagnose"]
        rows.append(Row("diagnosis, 64 ranks x 10 MB logs + 1000 steps of events (diagnose_bench)", c["bench_ms"],
                        reps=c["reps"], note="CPU %s ms" % fmt(c.get("cpu_ms"))))
    if "scale" in r and r["scale"].get("fault", {}).get("explain_ms"):
        f = r["scale"]["fault"]
        rows.append(Row("`faultline explain` of the real 64-rank fault run (process start to exit)",
                        med(f["explain_ms"]), reps=len(f["explain_ms"])))
    if "suite" in r:
        c = r["suite"]
        b, t = c.get("builtin", {}), c.get("torchrun", {})
        failed = sum(n for v, n in b.get("counts", {}).items() if v not in ("pass", "unsupported"))
        # A suite time is a figure only when the suite passed: scenarios that
        # fail (start-up slower than their hang timeout on a loaded machine,
        # say) end early or late.
        rows.append(Row("full CPU catalog, `faultline suite scenarios -j 2` (faultline: --stack builtin, "
                        "torchrun: --stack torchrun)", med(b.get("wall_s")), med(t.get("wall_s")), unit="s",
                        goal="<= 120 s" if not failed else f"<= 120 s: NOT VALID, {failed} failed",
                        goal_max=120 if not failed else None, reps=len(b.get("wall_s", [])),
                        note="builtin %s; torchrun %s" % (b.get("counts"), t.get("counts"))))
    return rows


def results_md(rows):
    out = ["| measure | faultline | torchrun | ratio | unit | goal | reps | note |",
           "| --- | ---: | ---: | ---: | --- | --- | ---: | --- |"]
    for x in rows:
        ratio = x.ratio()
        out.append(f"| {x.measure} | {fmt(x.fl)} | {fmt(x.tr)} | {'-' if ratio is None else fmt(ratio, 1) + 'x'} | "
                   f"{x.unit} | {x.goal_text()} | {x.reps or ''} | {x.note} |")
    return "\n".join(out)


def scale_md(s):
    out = ["| ranks | wall s | harness CPU s | harness CPU % | harness peak RSS MiB | first pg_init s | "
           "all pg_init s | ranks' PSS sum MiB | ranks' RSS sum MiB | explain ms | verdict | torchrun wall s | "
           "torchrun CPU s | torchrun all pg_init s |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    for n in s["sizes"]:
        f = s["faultline"].get(n) or s["faultline"].get(str(n), {})
        t = s["torchrun"].get(n) or s["torchrun"].get(str(n), {})
        out.append(f"| {n} | {fmt(f.get('wall_s'))} | {fmt(f.get('harness_cpu_s'))} | {fmt(f.get('harness_cpu_pct'))} | "
                   f"{fmt(f.get('harness_peak_rss_mib'))} | {fmt(f.get('first_pg_init_s'))} | "
                   f"{fmt(f.get('all_pg_init_s'))} | {fmt(f.get('ranks_peak_pss_sum_mib'), 0)} | "
                   f"{fmt(f.get('ranks_peak_rss_sum_mib'), 0)} | {fmt(med(f.get('explain_ms')))} | "
                   f"{f.get('verdict', '-')} | {fmt(t.get('wall_s'))} | {fmt(t.get('harness_cpu_s'))} | "
                   f"{fmt(t.get('all_pg_init_s'))} |")
    return "\n".join(out)


def growth(s):
    """Per-rank growth of the harness's CPU, memory and the run's wall time (least squares over the sizes)."""
    pts = lambda key: [(int(n), (s["faultline"].get(n) or {}).get(key)) for n in s["faultline"]]
    g = {}
    for key, scale_by in (("harness_cpu_s", 1e3), ("harness_peak_rss_mib", 1024), ("wall_s", 1),
                          ("all_pg_init_s", 1), ("ranks_peak_pss_sum_mib", 1)):
        b, a = slope(pts(key))
        g[key] = None if b is None else {"per_rank": b * scale_by, "fixed": a * scale_by}
    return g


def growth_md(g):
    def line(key, what, unit):
        x = g.get(key)
        return None if not x else f"- {what}: {fmt(x['per_rank'])} {unit} per rank (+ {fmt(x['fixed'])} {unit} fixed)"
    lines = [line("harness_cpu_s", "harness CPU time", "ms"),
             line("harness_peak_rss_mib", "harness peak RSS", "KiB"),
             line("wall_s", "wall time of the run", "s"),
             line("all_pg_init_s", "start to the last rank's pg_init", "s"),
             line("ranks_peak_pss_sum_mib", "the ranks' memory (PSS, sum)", "MiB")]
    return "\n".join(x for x in lines if x)


def fault_md(f):
    rc = f.get("root_cause") or {}
    return (f"Fault `{' '.join(f.get('fault', []))}` in 64 ranks: root cause `{rc.get('kind')}` on rank "
            f"{rc.get('rank')}, roles {f.get('roles')}, teardown clean: {f.get('teardown_clean')} "
            f"({f.get('teardown_ms')} ms), wall {fmt(f.get('wall_s'))} s, harness CPU {fmt(f.get('harness_cpu_s'))} s, "
            f"peak RSS {fmt(f.get('harness_peak_rss_mib'))} MiB -> "
            f"**{'diagnosed right' if f.get('diagnosed_right') else 'WRONG DIAGNOSIS'}**.")


def micro_md(m):
    out = ["| benchmark | median wall | median CPU | unit | throughput (wall) | label |",
           "| --- | ---: | ---: | --- | ---: | --- |"]
    for binary, benches in m.items():
        for name, b in benches.items():
            tp = ""
            if "bytes_per_second" in b:
                tp = f"{b['bytes_per_second'] / 2**20:.0f} MiB/s"
            elif "items_per_second" in b:
                ips = b["items_per_second"]
                tp = f"{ips / 1e6:.2f} M items/s" if ips >= 1e6 else f"{ips / 1e3:.1f} k items/s"
            out.append(f"| `{binary}` {name} | {fmt(b['median'])} | {fmt(b.get('cpu_median'))} | {b['unit']} | {tp} | "
                       f"{b.get('label', '')} |")
    return "\n".join(out)
