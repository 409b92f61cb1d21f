"""Plays the server in the security tests: ``python sandbox_driver.py APP_DIR < requests.json``.

Run by `tests/exercise/test_sandbox_security.py` as a separate process (as root, or as an unprivileged
user through ``setpriv``) from inside a copy of the app, it imports the sandbox from that copy,
checks every submission of the JSON object on stdin (name -> source) and prints one JSON
object: the availability and, per submission, every text of its report.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor


def main() -> None:
    app = sys.argv[1]
    sys.path.insert(0, app)
    from exercise.sandbox import Sandbox, check_submission

    submissions = json.load(sys.stdin)
    sandbox = Sandbox()
    availability = sandbox.availability()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(check_submission, source, sandbox, 10.0) for name, source in submissions.items()}
        reports = {name: future.result() for name, future in futures.items()}
    sandbox.close()
    out = {"available": availability.available, "reason": availability.reason, "reports": {}}
    for name, report in reports.items():
        out["reports"][name] = {
            "passed": report.passed, "incident": report.incident, "diagnoses": report.diagnoses,
            "checks": [[c.name, c.passed, c.message] for c in report.checks],
            "stdout": report.stdout, "stderr": report.stderr, "isolation": report.isolation,
            "sandbox_uid": report.sandbox_uid, "limits": report.limits,
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
