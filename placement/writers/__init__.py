"""Pure writers: from a solved plan to files (plan.json, schedulercfg, redeploy script, picture).

Each writer returns text (or bytes) from typed values; :func:`placement.writers.bundle.write_plan_dir` is the one
function that touches the file system.
"""
