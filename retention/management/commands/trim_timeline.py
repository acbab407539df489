"""``manage.py trim_timeline AGENT_ID|--all-agents --keep N|--before-seq S|--older-than DAYS [--dry-run]``."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from kernel.errors import ChartrError
from retention.services import older_than_cutoff, trim_plan, trim_timelines
from timeline.writes.pruning import TrimPolicy


class Command(BaseCommand):
    help = (
        "Remove an agent's oldest committed rows (or every agent's, with --all-agents). The seqs of the rows "
        "that stay never change; the timeline's first retained seq moves up. A 'pre-trim' data snapshot is "
        "taken first, so `restore` undoes it."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent_id", nargs="?", help="the agent to trim")
        parser.add_argument("--all-agents", action="store_true", help="apply the policy to every agent")
        policy = parser.add_mutually_exclusive_group(required=True)
        policy.add_argument("--keep", type=int, metavar="N", help="keep the newest N rows")
        policy.add_argument("--before-seq", type=int, metavar="S", help="remove the rows below seq S")
        policy.add_argument("--older-than", type=int, metavar="DAYS", help="remove rows committed over DAYS ago")
        # Count only, as purge_archived does: the real trim commits batch by batch.
        parser.add_argument("--dry-run", action="store_true", help="count what would go; remove nothing")

    def handle(self, *args, agent_id, all_agents, keep, before_seq, older_than, dry_run, **options):
        if bool(agent_id) == bool(all_agents):
            raise CommandError("Name one AGENT_ID, or give --all-agents.")
        if older_than is not None and older_than < 0:
            raise CommandError(f"--older-than must be 0 or more days, not {older_than}.")
        cutoff = older_than_cutoff(older_than_days=older_than) if older_than is not None else None
        agent_ids = None if all_agents else [agent_id]
        try:
            policy = TrimPolicy(keep=keep, before_seq=before_seq, older_than=cutoff)
            if dry_run:
                return self._report_plan(trim_plan(agent_ids=agent_ids, policy=policy))
            report = trim_timelines(agent_ids=agent_ids, policy=policy)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except ChartrError as exc:
            raise CommandError(exc.message) from exc
        if report.snapshot is None:
            self.stdout.write("Nothing to trim.")
            return
        for result in report.trimmed:
            self.stdout.write(
                f"  {result.agent_id}: removed {result.rows} rows ({result.bytes} bytes); "
                f"first retained seq now {result.min_seq}"
            )
        self.stdout.write(
            f"Trimmed {len(report.trimmed)} agent(s). Undo with: manage.py restore --from {report.snapshot}"
        )

    def _report_plan(self, plan: dict[str, int]) -> None:
        self.stdout.write(f"Would trim {len(plan)} agent(s) (dry run):")
        for agent_id, rows in plan.items():
            self.stdout.write(f"  {agent_id}: {rows} rows")
