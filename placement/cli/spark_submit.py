"""``placement profile`` as a ``spark-submit`` application; nothing imports this module (it imports the CLI, which
sits on top of everything)::

    spark-submit --master spark://host:7077 \\
        "$(python -c 'import placement.cli.spark_submit as m; print(m.__file__)')" DIR --out profile.json

The arguments are ``placement profile``'s. Under spark-submit the driver JVM already runs, so master, memory and
Java options are whatever spark-submit was given (``--spark-master`` still overrides the master).
"""

from __future__ import annotations

import sys

from placement.cli import main

if __name__ == "__main__":
    main(["profile", *sys.argv[1:]])
