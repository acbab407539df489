"""The checks that end an import, inside its transaction: a mismatch rolls it all back.

- the file is whole: its ``end`` record comes last and its counts are the records read;
- the database holds as many records of each kind as the file;
- each agent's content hash (``portability.selectors.AgentDigest``: its record, its timeline
  head and every row), recomputed from what the database now holds, is the one the export wrote;
- the Claude Code sessions read back as the file holds them (``RecordSetDigest`` of both).
"""

from __future__ import annotations

from portability import format as fmt
from portability.selectors import RecordSetDigest, agent_digest, agents_with_heads, each, held_counts, sessions_digest


def verify_import(
    reader: fmt.Reader,
    counts: dict[str, int],
    digests: dict[str, tuple[int, int, str]],
    *,
    with_tokens: bool,
    left_out: dict[str, frozenset[str]],
    sessions: RecordSetDigest,
) -> int:
    """Raise ``InstanceFileInvalid`` naming the first mismatch; how many agents' hashes matched.
    ``left_out``: per agent, the keys its record did not have (a file written before them);
    ``sessions``: the digest of the file's ``claude_code_session`` records."""
    end = reader.expect("end")
    if reader.peek() is not None:
        raise reader.error(reader.peek(), "a record after the end record")
    if fmt.counts_of(end.record) != counts:
        raise reader.error(end, f"the end record counts {end.record.get('counts')!r}; the file holds {counts!r}")
    held = held_counts(with_tokens=with_tokens)
    if held != counts:
        differ = ", ".join(
            f"{kind}: {held[kind]} stored, {counts[kind]} in the file"
            for kind in fmt.KINDS
            if held[kind] != counts[kind]
        )
        raise reader.error(None, f"the database holds other counts than the file after the import ({differ})")
    if sessions_digest().value != sessions.value:
        raise reader.error(None, "the claude_code_session records do not read back as the file holds them")
    verified = 0
    for agent in each(agents_with_heads()):
        if agent.agent_id not in digests:
            raise reader.error(None, f"agent {agent.agent_id!r} has no timeline record")
        lineno, rows, expected = digests[agent.agent_id]
        digest = agent_digest(agent, left_out=left_out.get(agent.agent_id, frozenset()))
        if (digest.rows, digest.hexdigest()) != (rows, expected):
            raise reader.error(
                lineno,
                f"agent {agent.agent_id!r} does not read back as exported: content hash {digest.hexdigest()} "
                f"({digest.rows} rows), the export's {expected} ({rows} rows)",
            )
        verified += 1
    return verified
