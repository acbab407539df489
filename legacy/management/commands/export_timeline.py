"""manage.py export_timeline: write committed timelines as chartr timeline JSONL, or (``--home``)
everything as a legacy home that ``import_legacy_json`` reads back."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from kernel.errors import ChartrError
from legacy.export import timeline_lines, write_all_timelines, write_timeline_file
from legacy.export_home import write_home


class Command(BaseCommand):
    help = (
        "Export an agent's committed timeline (AGENT_ID [--out FILE], stdout by default), or every "
        "agent's with --all --out-dir DIR (one <agent_id>.jsonl each), or everything with --home DIR "
        "(projects, workspaces and agents under Paseo's key names, extra included, and every timeline). "
        "Import them with import_legacy_json."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent_id", nargs="?")
        parser.add_argument("--out", help="write to this file instead of stdout")
        parser.add_argument("--all", dest="export_all", action="store_true", help="export every agent; needs --out-dir")
        parser.add_argument("--out-dir", help="directory for --all")
        parser.add_argument("--home", help="write every record and timeline as a legacy home in this directory")

    def handle(self, *args, agent_id, out, export_all, out_dir, home, **options):
        if home:
            if agent_id or out or export_all or out_dir:
                raise CommandError("--home DIR goes alone.")
            counts = write_home(out_dir=home)
            self.stderr.write("Exported " + ", ".join(f"{n} {kind}" for kind, n in counts.items()) + f" to {home}")
            return
        if export_all:
            if agent_id or out:
                raise CommandError("--all takes --out-dir DIR, not an agent id or --out.")
            if not out_dir:
                raise CommandError("--all needs --out-dir DIR.")
        elif not agent_id:
            raise CommandError("Give an AGENT_ID, or --all --out-dir DIR.")
        elif out_dir:
            raise CommandError("--out-dir goes with --all; use --out FILE for one agent.")
        try:
            if export_all:
                written = write_all_timelines(out_dir=out_dir)
                rows = sum(count for _, count in written)
                self.stderr.write(f"Exported {len(written)} timeline(s), {rows} row(s), to {out_dir}")
            elif out:
                rows = write_timeline_file(agent_id=agent_id, path=out)
                self.stderr.write(f"Exported {rows} row(s) of {agent_id} to {out}")
            else:
                for line in timeline_lines(agent_id=agent_id):
                    self.stdout.write(line, ending="")  # each line as produced, its own newline included
        except ChartrError as exc:
            raise CommandError(exc.message) from exc
        except OSError as exc:
            raise CommandError(f"Cannot write: {exc}") from exc
