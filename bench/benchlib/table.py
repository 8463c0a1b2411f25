"""From bench/run's raw results to the rows of the results table (medians,
one column and one ratio torchrun/faultline per torchrun, newest first, goal
met or missed), the goals as pass/miss lines, the scaling tables with the
growth per rank, and the micro-benchmark table; rendered as Markdown."""
import os
import re
import statistics

from benchlib.torchruns import version_key


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


def torchrun_names(section):
    """The torchrun stacks a section measured ("torchrun@2.13", ...), newest first."""
    return sorted((k for k in section if k.startswith("torchrun@")), key=version_key)


def lead_torchrun(names):
    """The torchrun whose ratio is the claim: the newest 2.x (or later) measured; None without one."""
    for n in sorted(names, key=version_key):
        m = re.search(r"@(\d+)\.", n)
        if m and int(m.group(1)) >= 2:
            return n
    return None


def _per_torchrun(c, what, unit="s"):
    """ "0.1 s (torchrun@2.13), 5 s (torchrun@1.13)": a recorded property of each torchrun of a section."""
    info = c.get("torchruns", {})
    parts = [f"{fmt_plain(info.get(n, {}).get(what))} {unit} ({n})" for n in torchrun_names(c)]
    return ", ".join(parts)


def fmt_plain(x):
    return "?" if x is None else f"{x:g}" if isinstance(x, (int, float)) else str(x)


def _no_figure(c, names, key):
    """"; torchrun@2.13 gave no figure: rank 0: ... (trainer caveat)" for each torchrun whose repetitions all
    failed to give `key`: why its cell is empty."""
    out = ""
    for n in names:
        reps = c.get(n) or []
        if reps and all(x.get(key) is None for x in reps):
            errors = sorted({x.get("error") or f"exit {x.get('exit_code')}" for x in reps})
            caveat = c.get("torchruns", {}).get(n, {}).get("trainer_caveat")
            out += f"; {n} gave no figure: {', '.join(errors)}" + (f" ({caveat})" if caveat else "")
    return out


class Row:
    """One measure: faultline's figure and each torchrun's (a dict by stack name)."""

    def __init__(self, measure, fl, tr=None, unit="ms", goal=None, goal_max=None, reps=None, note=""):
        self.measure, self.fl, self.tr, self.unit = measure, fl, dict(tr or {}), unit
        self.goal, self.goal_max, self.reps, self.note = goal, goal_max, reps, note

    def ratio(self, name):
        t = self.tr.get(name)
        if self.fl is None or t is None or self.fl <= 0:
            return None
        return t / self.fl

    def goal_text(self):
        if not self.goal:
            return ""
        if self.goal_max is None or self.fl is None:
            return self.goal
        return f"{self.goal}: {'met' if self.fl <= self.goal_max else 'MISSED'}"

    def as_dict(self):
        names = sorted(self.tr, key=version_key)
        return {"measure": self.measure, "faultline": self.fl, **{n: self.tr[n] for n in names},
                "ratio": {n: self.ratio(n) for n in names}, "unit": self.unit, "goal": self.goal,
                "goal_max": self.goal_max,
                "goal_met": None if self.goal_max is None or self.fl is None else self.fl <= self.goal_max,
                "reps": self.reps, "note": self.note}


def result_rows(r):
    """The side-by-side table, from whichever sections were run."""
    rows = []
    if "crash" in r:
        c = r["crash"]
        fl, n = c["faultline"], len(c["faultline"])
        trs = {name: c[name] for name in torchrun_names(c)}
        per = lambda key: {name: col(v, key) for name, v in trs.items()}
        rows += [
            Row("crash detection: rank exit -> supervisor noticed", col(fl, "detect_ms"), None, goal="<= 10 ms",
                goal_max=10, reps=n, note="torchrun has no observable moment; it polls its workers every "
                                          + _per_torchrun(c, "monitor_interval_s") + " (its --monitor-interval default)"),
            Row("first failure -> SIGTERM reaches the other ranks", col(fl, "term_delivered_ms"),
                per("term_delivered_ms"), reps=n,
                note=("rank 1 fails 0.5 s + a random part of the longest poll interval after start"
                      if "delays_s" in c else "rank 1 fails 0.5 s after start (one phase of torchrun's poll)")),
            Row("first failure -> all ranks reaped, cooperative ranks", col(fl, "all_reaped_ms"),
                per("all_reaped_ms"), goal="<= 500 ms", goal_max=500, reps=n,
                note="/proc polled every 1 ms; faultline's own record: %s ms" % fmt(col(fl, "all_reaped_record_ms"))),
            Row("first failure -> launcher returned (faultline: report written, diagnosed)",
                col(fl, "launcher_returned_ms"), per("launcher_returned_ms"), reps=n),
        ]
    if "term_ignoring" in r:
        c = r["term_ignoring"]
        g = c["grace_s"]
        rows.append(Row(f"first failure -> all reaped, one SIGTERM-ignoring rank (faultline --grace {g})",
                        col(c["faultline"], "all_reaped_ms"),
                        {name: col(c[name], "all_reaped_ms") for name in torchrun_names(c)},
                        goal=f"<= grace + 100 ms", goal_max=g * 1000 + 100, reps=len(c["faultline"]),
                        note=("torchrun waits its default grace before SIGKILL: "
                              + _per_torchrun(c, "sigterm_grace_s")
                              if c.get("torchruns") else "torchrun waits a fixed 30 s before SIGKILL")))
    if "hang" in r:
        c = r["hang"]
        names = torchrun_names(c)
        trainers = "; ".join(f"{n}: {os.path.basename(c.get('torchruns', {}).get(n, {}).get('trainer') or '?')}"
                             for n in names)
        rows.append(Row(f"hang -> report naming the laggard rank (faultline --hang-timeout {c['hang_timeout_s']}) "
                        f"vs torchrun ending the job (Gloo timeout {c['collective_timeout_s']} s)",
                        col(c["faultline"], "report_ms"), {n: col(c[n], "ended_ms") for n in names},
                        reps=len(c["faultline"]),
                        note="reference trainer, %d ranks, hung_collective at rank 1, timed from its fault event; "
                             "faultline detected the hang after %s ms, then took native stacks of the stuck ranks with %s (cut "
                             "off at 5 s in %d of %d); laggard named in %d of %d; trainer binaries: %s"
                             % (c["world"], fmt(col(c["faultline"], "detected_ms")),
                                "/".join(sorted({x.get("stack_tool") or "gdb" for x in c["faultline"]})),
                                sum(1 for x in c["faultline"] if x.get("gdb_cut_off")), len(c["faultline"]),
                                sum(1 for x in c["faultline"] if x["report_ms"] is not None), len(c["faultline"]),
                                f"faultline: {os.path.basename(c.get('faultline_trainer') or 'faultline-trainer')}; "
                                + trainers) + _no_figure(c, names, "ended_ms")))
    if "adaptive" in r:
        rows += adaptive_rows(r["adaptive"])
    if "hang-defaults" in r:
        rows += hang_defaults_rows(r["hang-defaults"])
    if "launch" in r:
        c = r["launch"]
        names = torchrun_names(c)
        if c.get("started_faultline"):
            floor = med(c.get("started_floor"))
            rows.append(Row("launch: process start -> all 8 ranks running (fl_hostile stamps)",
                            med(c["started_faultline"]), {n: med(c.get("started_" + n)) for n in names},
                            goal="<= 1.5x floor", goal_max=None if floor is None else 1.5 * floor,
                            reps=len(c["started_faultline"]),
                            note="with --no-instrument %s ms; floor: the 8 ranks posix_spawn'd from Python = %s ms"
                                 % (fmt(med(c.get("started_faultline_no_instrument"))), fmt(floor))))
        rows.append(
            Row("launch + supervise + reap 8 ranks of /bin/true, whole `faultline exec` process (diagnosis and 5 "
                "report files included)", med(c["faultline"]), {n: med(c[n]) for n in names},
                reps=len(c["faultline"]),
                note="faultline process CPU %s ms; with --no-instrument %s ms; floor: posix_spawn x 8 + waitpid "
                     "from Python = %s ms" % (fmt(med(c.get("faultline_cpu"))), fmt(med(c.get("faultline_no_instrument"))),
                                              fmt(med(c["floor"])))))
        if c.get("in_process_ms") is not None:
            rows.append(Row("the same in process (harness_bench BM_LaunchAndReap/8)", c["in_process_ms"],
                            goal="<= 30 ms", goal_max=30, reps=c.get("in_process_reps"),
                            note="harness CPU %s ms" % fmt(c.get("in_process_cpu_ms"))))
    if "idle" in r:
        c = r["idle"]
        rows.append(Row("supervisor CPU, 64 idle ranks", med(c["faultline"]),
                        {n: med(c[n]) for n in torchrun_names(c)}, unit="% of a core",
                        goal="< 2 %", goal_max=2, reps=len(c["faultline"]), note="2 s windows, schedstat ns"))
    if "scale" in r and 64 in r["scale"]["faultline"]:
        s = r["scale"]
        fl64 = s["faultline"][64]
        ran = {n: s[n][64] for n in torchrun_names(s) if 64 in s[n]}
        # A torchrun run that failed ended early: its CPU share is no figure.
        failed = [f"{n} failed (exit {x.get('exit_code')}: {x.get('error')})" for n, x in ran.items()
                  if x.get("exit_code") != 0]
        rows.append(Row("supervisor CPU over a whole 64-rank reference-trainer run", fl64.get("harness_cpu_pct"),
                        {n: x.get("harness_cpu_pct") for n, x in ran.items() if x.get("exit_code") == 0},
                        unit="% of a core", goal="< 2 %", goal_max=2, reps=1,
                        note="own CPU time / wall time, start-up, teardown and diagnosis included"
                             + "".join("; " + f for f in failed)))
    if "diagnose" in r:
        c = r["diagnose"]
        rows.append(Row("diagnosis, 64 ranks x 10 MB logs + 1000 steps of events (diagnose_bench)", c["bench_ms"],
                        reps=c["reps"], note="CPU %s ms" % fmt(c.get("cpu_ms"))))
    if "scale" in r and r["scale"].get("fault", {}).get("explain_ms"):
        f = r["scale"]["fault"]
        rows.append(Row(f"`faultline explain` of the real {f.get('world', 64)}-rank fault run (process start to exit)",
                        med(f["explain_ms"]), reps=len(f["explain_ms"])))
    if "suite" in r:
        c = r["suite"]
        b = c.get("builtin", {})
        names = torchrun_names(c)
        failed = sum(n for v, n in b.get("counts", {}).items() if v not in ("pass", "unsupported"))
        # A suite time is a figure only when the suite passed: scenarios that
        # fail (start-up slower than their hang timeout on a loaded machine,
        # say) end early or late.
        # The same for each torchrun's time: with failures it is no figure to compare.
        bad = {n: sum(k for v, k in c[n].get("counts", {}).items() if v not in ("pass", "unsupported"))
               for n in names}
        rows.append(Row("full CPU catalog, `faultline suite scenarios -j 2` (faultline: --stack builtin, "
                        "torchrun: --stack torchrun with that torchrun)", med(b.get("wall_s")),
                        {n: med(c[n].get("wall_s")) for n in names if not bad[n]}, unit="s",
                        goal="<= 120 s" if not failed else f"<= 120 s: NOT VALID, {failed} failed",
                        goal_max=120 if not failed else None, reps=len(b.get("wall_s", [])),
                        note="builtin %s; %s" % (b.get("counts"), "; ".join(
                            f"{n} {c[n].get('skipped') or c[n].get('counts')}"
                            + (f" ({fmt(med(c[n].get('wall_s')))} s, no figure: {bad[n]} failed)" if bad[n] else "")
                            for n in names))))
    return rows


def table_torchruns(rows):
    """The torchrun columns of a table: every stack any row has, newest first."""
    return sorted({n for x in rows for n in x.tr}, key=version_key)


def results_md(rows):
    names = table_torchruns(rows)
    head = "| measure | faultline | " + "".join(f"{n} | ratio {n.split('@', 1)[1]} | " for n in names)
    out = [head + "unit | goal | reps | note |",
           "| --- | ---: | " + "---: | ---: | " * len(names) + "--- | --- | ---: | --- |"]
    for x in rows:
        cells = ""
        for n in names:
            ratio = x.ratio(n)
            cells += f"{fmt(x.tr.get(n))} | {'-' if ratio is None else fmt(ratio, 1) + 'x'} | "
        out.append(f"| {x.measure} | {fmt(x.fl)} | {cells}{x.unit} | {x.goal_text()} | {x.reps or ''} | {x.note} |")
    return "\n".join(out)


def adaptive_rows(c):
    """The adaptive hang detection beside the fixed timeout alone: fault -> trigger naming rank 1."""
    rows = []
    for mode, what in (("adaptive", "adaptive detection (10x learned p99, floor 0.5 s) under"),
                       ("fixed", "fixed timeout alone, --hang-factor 0,")):
        reps = c.get(mode) or []
        named = sum(1 for x in reps if x.get("detected_ms") is not None)
        adaptive = sum(1 for x in reps if x.get("adaptive"))
        rows.append(Row(f"hang -> laggard named, {what} --hang-timeout {c['hang_timeout_s']}",
                        col(reps, "detected_ms"), None, goal="<= 1000 ms" if mode == "adaptive" else None,
                        goal_max=1000 if mode == "adaptive" else None, reps=len(reps),
                        note="rhythm.py, %d ranks, %s ms steps, shim hung_collective at rank 1 step %d, timed from "
                             "its fault event to the supervisor's trigger; report written after %s ms; laggard named "
                             "in %d of %d, by the adaptive trigger in %d"
                             % (c["world"], fmt_plain(c["step_ms"]), c["fault_step"], fmt(col(reps, "report_ms")),
                                named, len(reps), adaptive)))
    return rows


def hang_defaults_launchers(c):
    """(launcher, its entry key for a fault step) in a hang-defaults section; files before torchrun was
    measured there hold the builtin launcher alone, under "stepN"."""
    return [(name, (lambda step, n=name: f"step{step}" if n == "builtin" else f"{n} step{step}"))
            for name in c.get("launchers", ["builtin"])]


def hang_defaults_rows(c):
    """Hangs named with the defaults only, early (no rhythm) and late (a rhythm learned), under faultline's
    own launcher and under each torchrun (faultline observing it from outside)."""
    rows = []
    timeout = c.get("default_pg_timeout_s")
    for name, key in hang_defaults_launchers(c):
        how = "`faultline exec`" if name == "builtin" else f"`faultline exec --launcher external -- {name.split('@')[0]}` ({name})"
        for step in c.get("fault_steps", []):
            reps = c.get(key(step)) or []
            named = sum(1 for x in reps if x.get("detected_ms") is not None)
            idle = sum(1 for x in reps if "idle rule" in (x.get("trigger") or ""))
            rows.append(Row(f"hang at step {step} -> laggard named, defaults only ({how}, no hang flag)",
                            col(reps, "detected_ms"), None, goal="<= 2000 ms", goal_max=2000, reps=len(reps),
                            note="rhythm.py, %d ranks, %s ms steps, shim hung_collective at rank 1, timed from its fault "
                                 "event to the supervisor's trigger; report written after %s ms; laggard named in %d of "
                                 "%d, by the idle rule in %d (else the learned rhythm); torchrun and plain Gloo detect no "
                                 "hang: the job waits for the process group's timeout, %s s by default (torch's "
                                 "default_pg_timeout)"
                                 % (c["world"], fmt_plain(c["step_ms"]), fmt(col(reps, "report_ms")), named, len(reps),
                                    idle, fmt_plain(timeout) if timeout is not None else "?")))
    return rows


def goals(r, runs=None, load_limit=1.0):
    """The goals, each a pass or miss as measured in this run (None: not
    measured, or cannot be decided, with why). `runs` (section -> its load)
    marks a goal whose section ran under load."""
    out = []

    def add(goal, section, value, bound, text, why=None):
        met = None if value is None or bound is None else value <= bound
        g = {"goal": goal, "section": section, "measured": value, "bound": bound, "met": met, "detail": text}
        if why:
            g["why"] = why
        load = ((runs or {}).get(section) or {}).get("load_before")
        if load is not None and load > load_limit:
            g["under_load"] = load
        out.append(g)

    c = r.get("crash")
    lead = lead_torchrun(torchrun_names(c)) if c else None
    if c and lead:
        fl, tr = col(c["faultline"], "all_reaped_ms"), col(c[lead], "all_reaped_ms")
        add(f"first failure -> all ranks gone <= 1/10 of {lead}'s", "crash", fl, None if tr is None else tr / 10,
            f"faultline {fmt(fl)} ms, {lead} {fmt(tr)} ms" + ("" if not fl or tr is None else f" ({tr / fl:.1f}x)"))
    else:
        add("first failure -> all ranks gone <= 1/10 of torchrun 2.x's", "crash", None, None, "",
            why="crash not run" if not c else "no torchrun 2.x measured")
    c = r.get("term_ignoring")
    if c:
        fl, g = col(c["faultline"], "all_reaped_ms"), c["grace_s"]
        add(f"a SIGTERM-ignoring rank gone within grace + 0.1 s (--grace {g})", "term", fl, g * 1000 + 100,
            f"{fmt(fl)} ms, bound {g * 1000 + 100} ms")
    else:
        add("a SIGTERM-ignoring rank gone within grace + 0.1 s", "term", None, None, "", why="term not run")
    c = r.get("idle")
    if c:
        fl = med(c["faultline"])
        # "< 2 %": the bound is exclusive; 2.0 itself misses.
        add(f"supervisor CPU < 2 % of a core at {c.get('nranks', 64)} idle ranks", "idle", fl, 2 - 1e-9,
            f"{fmt(fl)} % of a core")
    else:
        add("supervisor CPU < 2 % of a core at 64 ranks", "idle", None, None, "", why="idle not run")
    c = r.get("launch")
    if c and c.get("started_faultline"):
        fl, floor = med(c["started_faultline"]), med(c.get("started_floor"))
        add(f"launch at {c.get('nproc', 8)} ranks within 1.5x of spawning them directly (the floor)", "launch", fl,
            None if floor is None else 1.5 * floor,
            f"faultline {fmt(fl)} ms (--no-instrument {fmt(med(c.get('started_faultline_no_instrument')))} ms), "
            f"floor {fmt(floor)} ms" + ("" if not floor or fl is None else f" ({fl / floor:.2f}x)"))
    else:
        add("launch at 8 ranks within 1.5x of spawning them directly (the floor)", "launch", None, None, "",
            why="launch not run")
    c = r.get("adaptive")
    if c and c.get("adaptive"):
        fl, fixed = col(c["adaptive"], "detected_ms"), col(c.get("fixed"), "detected_ms")
        add(f"a hang on {fmt_plain(c['step_ms'])} ms steps: laggard named within 1 s of the fault", "adaptive", fl,
            1000, f"adaptive {fmt(fl)} ms, fixed --hang-timeout {c['hang_timeout_s']} alone {fmt(fixed)} ms")
    else:
        add("a hang on 50 ms steps: laggard named within 1 s of the fault", "adaptive", None, None, "",
            why="adaptive not run")
    c = r.get("hang-defaults")
    for name, key in hang_defaults_launchers(c or {}):
        under = "" if name == "builtin" else f" under {name}"
        for step in (c or {}).get("fault_steps", [3, 100]):
            fl = col((c or {}).get(key(step)), "detected_ms") if c else None
            add(f"a hang at step {step}{under}, defaults only: laggard named within 2 s of the fault", "hang-defaults",
                fl, 2000 if c else None, f"{fmt(fl)} ms" if c else "", why=None if c else "hang-defaults not run")
    return out


def goals_md(gs):
    lines = []
    for g in gs:
        word = {True: "**met**", False: "**MISSED**", None: "**not decided**"}[g["met"]]
        text = f"- {word}: {g['goal']}"
        if g.get("detail"):
            text += f": {g['detail']}"
        if g.get("why"):
            text += f" ({g['why']})"
        if g.get("under_load") is not None:
            text += f"; figures taken under load (load average {g['under_load']:.2f} before the section)"
        lines.append(text)
    return "\n".join(lines)


def _size(d, n):
    return d.get(n) or d.get(str(n)) or {}


def scale_md(s):
    """faultline at every size, then each torchrun at the sizes it ran."""
    out = ["| ranks | wall s | harness CPU s | harness CPU % | harness peak RSS MiB | first pg_init s | "
           "all pg_init s | ranks' PSS sum MiB | ranks' RSS sum MiB | explain ms | verdict |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for n in s["sizes"]:
        f = _size(s["faultline"], n)
        out.append(f"| {n} | {fmt(f.get('wall_s'))} | {fmt(f.get('harness_cpu_s'))} | {fmt(f.get('harness_cpu_pct'))} | "
                   f"{fmt(f.get('harness_peak_rss_mib'))} | {fmt(f.get('first_pg_init_s'))} | "
                   f"{fmt(f.get('all_pg_init_s'))} | {fmt(f.get('ranks_peak_pss_sum_mib'), 0)} | "
                   f"{fmt(f.get('ranks_peak_rss_sum_mib'), 0)} | {fmt(med(f.get('explain_ms')))} | "
                   f"{f.get('verdict', '-')} |")
    names = torchrun_names(s)
    if any(s[n] for n in names):
        out += ["", "The same trainer under each torchrun (its agent's own CPU and memory):", "",
                "| ranks | stack | trainer | wall s | agent CPU s | agent CPU % | agent peak RSS MiB | all pg_init s | "
                "exit |", "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        info = s.get("torchruns", {})
        for n in s["sizes"]:
            for name in names:
                t = _size(s[name], n)
                if not t:
                    continue
                trainer = t.get("trainer") or info.get(name, {}).get("trainer") or "faultline-trainer"
                out.append(f"| {n} | {name} | {os.path.basename(trainer)} | {fmt(t.get('wall_s'))} | "
                           f"{fmt(t.get('harness_cpu_s'))} | {fmt(t.get('harness_cpu_pct'))} | "
                           f"{fmt(t.get('harness_peak_rss_mib'))} | {fmt(t.get('all_pg_init_s'))} | "
                           f"{t.get('exit_code', '-')} |")
        for n in s["sizes"]:
            for name in names:
                t = _size(s[name], n)
                if t and t.get("exit_code") not in (0, None):
                    caveat = info.get(name, {}).get("trainer_caveat")
                    out += ["", f"{name} at {n} ranks failed: {t.get('error')}" + (f" ({caveat})" if caveat else "")]
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
    return (f"Fault `{' '.join(f.get('fault', []))}` in {f.get('world', 64)} ranks: root cause `{rc.get('kind')}` on rank "
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
