"""manage.py export_claude_code --out DIR: Claude Code sessions back to transcript files."""

from __future__ import annotations

from claude_code.home_export import export_home
from claude_code.keys import DEFAULT_NAMESPACE
from kernel.commands import ProgressCommand, require_migrated


class Command(ProgressCommand):
    help = (
        "Write a namespace's Claude Code sessions as Claude Code lays them out: "
        "DIR/projects/<project key>/<session id>.jsonl and its subagents' files, every line as it came in."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="the directory to write (projects/ is made in it)")
        parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"default: {DEFAULT_NAMESPACE}")

    def handle(self, *args, out: str, namespace: str, **options):
        require_migrated()
        report = self.run_service(export_home, out=out, namespace=namespace)
        self.stdout.write(
            f"Wrote {report.sessions} session(s), {report.subagents} subagent transcript(s), "
            f"{report.lines} line(s) under {report.out}/projects."
        )
        self.section("Not written", report.skipped)
