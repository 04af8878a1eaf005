"""Reads an ncu --csv details page (one row per kernel and metric) into {kernel ID: {metric: value}}, values in
base units (bytes, nanoseconds); the kernel names into {kernel ID: name}. Lines that are not quoted CSV (ncu's
==PROF== lines, the program's own output) are skipped."""
import csv

UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "ns": 1, "usecond": 1e3,
         "msecond": 1e6}


def read_metrics(path):
    rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
    head = rows[0]
    col = {name: head.index(name) for name in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
    metrics, names = {}, {}
    for r in rows[1:]:
        value = float(r[col["Metric Value"]].replace(",", "")) * UNITS.get(r[col["Metric Unit"]], 1)
        kernel = int(r[col["ID"]])
        metrics.setdefault(kernel, {})[r[col["Metric Name"]]] = value
        names[kernel] = r[col["Kernel Name"]]
    return metrics, names
