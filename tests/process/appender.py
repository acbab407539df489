"""A stand-in for the server's write load, run as a separate process by the data snapshot tests.

    python -m tests.process.appender seed N
    python -m tests.process.appender append SECONDS STOPFILE

``append`` follows the design notes' append path (lock the agent row, assign
head+1.., bulk-insert, move the head, all in one transaction) and, inside each
transaction, checks that the agent's rows are exactly 1..head_seq. It prints
"ready" once writing, and a JSON report on exit.
"""

from __future__ import annotations

import json
import os
import sys
import time

import django


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chartr.settings")
    django.setup()
    from django.db import DatabaseError, transaction
    from django.db.models import Count, Max
    from django.utils import timezone

    from snapshots.models import AgentSnapshot
    from tests.factories import AgentFactory, WorkspaceFactory
    from timeline.models import TimelineHead, TimelineRow

    if argv[0] == "seed":
        workspace = WorkspaceFactory()
        for n in range(int(argv[1])):
            AgentFactory(workspace=workspace, agent_id=f"load-{n}")
        return 0

    seconds, stopfile = float(argv[1]), argv[2]
    agent_ids = sorted(AgentSnapshot.objects.values_list("agent_id", flat=True))
    deadline = time.monotonic() + seconds
    batches = errors = 0
    violations: list[str] = []
    announced = False
    while time.monotonic() < deadline and not os.path.exists(stopfile):
        agent_id = agent_ids[batches % len(agent_ids)]
        try:
            with transaction.atomic():
                head = TimelineHead.objects.select_for_update().get(pk=agent_id).head_seq
                seen = TimelineRow.objects.filter(agent_id=agent_id).aggregate(top=Max("seq"), count=Count("id"))
                if (seen["top"] or 0) != head or seen["count"] != head:
                    violations.append(f"{agent_id}: head_seq {head}, rows {seen['count']}, max seq {seen['top']}")
                now = timezone.now()
                TimelineRow.objects.bulk_create(
                    TimelineRow(
                        agent_id=agent_id,
                        seq=head + k,
                        committed_at=now,
                        item_type="message",
                        item={"text": f"row {head + k}"},
                    )
                    for k in range(1, 6)
                )
                TimelineHead.objects.filter(pk=agent_id).update(head_seq=head + 5)
        except DatabaseError as exc:
            # Counted, not hidden: the test decides how many it tolerates.
            errors += 1
            print(f"error: {exc}", file=sys.stderr, flush=True)
            time.sleep(0.05)
            continue
        batches += 1
        if batches == 20 and not announced:
            announced = True
            print("ready", flush=True)
    print(json.dumps({"batches": batches, "errors": errors, "violations": violations[:20]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
