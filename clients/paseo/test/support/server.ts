/**
 * A real chartr for the suite: `manage.py` commands and gunicorn with one uvicorn worker,
 * as tests/support/processes.py starts it for chartr's own process tests.
 *
 * Everything is under one temporary root (data dir, config dir, static root, home) and the
 * database is SQLite in that data dir, or DATABASE_URL's when it is set. Every wait is bounded
 * and a server is stopped by its own process group id.
 */

import { spawn, execFile, type ChildProcess } from "node:child_process";
import { openSync, readFileSync, closeSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The chartr checkout to serve: this one, or PASEO_STORE_TEST_REPO's (to try test/pending against a branch). */
export const REPO =
  process.env.PASEO_STORE_TEST_REPO ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const PYTHON = process.env.CHARTR_PYTHON ?? path.join(REPO, ".venv/bin/python");

export function chartrEnv(root: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(CHARTR_|XDG_|DJANGO_)/.test(key)) continue;
    env[key] = value;
  }
  Object.assign(env, {
    CHARTR_DATA_DIR: path.join(root, "data"),
    XDG_CONFIG_HOME: path.join(root, "config"),
    CHARTR_STATIC_ROOT: path.join(root, "static"),
    HOME: path.join(root, "home"),
    CHARTR_WORKERS: "1",
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONUNBUFFERED: "1",
  });
  return env;
}

/** `manage.py ARGS`; resolves to its stdout, rejects with its output when it fails. */
export function manage(args: string[], env: Record<string, string>, timeoutMs = 180_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(PYTHON, ["manage.py", ...args], { cwd: REPO, env, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`manage.py ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

const LISTENING = /Listening at: http:\/\/127\.0\.0\.1:(\d+)/;

export class ChartrServer {
  private child: ChildProcess | null = null;
  private logOffset = 0;
  port: number | null = null;

  constructor(
    private readonly env: Record<string, string>,
    private readonly logPath: string,
  ) {}

  get baseUrl(): string {
    if (this.port === null) throw new Error("the server is not running");
    return `http://127.0.0.1:${this.port}`;
  }

  output(): string {
    try {
      return readFileSync(this.logPath, "utf8").slice(this.logOffset);
    } catch {
      return "";
    }
  }

  /** Start gunicorn (on `bind`, default a free port) and wait until /readyz answers 200. */
  async start(bind = "127.0.0.1:0", timeoutMs = 60_000): Promise<this> {
    try {
      this.logOffset = statSync(this.logPath).size;
    } catch {
      this.logOffset = 0;
    }
    const log = openSync(this.logPath, "a");
    const args = [
      "-m", "gunicorn", "chartr.asgi:application",
      "-k", "chartr.workers.DrainingUvicornWorker",
      "-b", bind, "-w", "1", "--no-control-socket", "--graceful-timeout", "2", "--log-level", "info",
    ];
    this.child = spawn(PYTHON, args, { cwd: REPO, env: this.env, stdio: ["ignore", log, log], detached: true });
    closeSync(log);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) break;
      const match = LISTENING.exec(this.output());
      if (match) {
        this.port = Number(match[1]);
        if (await this.ready()) return this;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await this.stop();
    throw new Error(`chartr did not start:\n${this.output()}`);
  }

  private async ready(): Promise<boolean> {
    try {
      const response = await fetch(`${this.baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      return response.status === 200;
    } catch {
      return false;
    }
  }

  /** SIGTERM the process group (gunicorn and its worker), SIGKILL after 15 s. */
  stop(): Promise<void> {
    return this.end("SIGTERM");
  }

  /** SIGKILL the process group, as a crash would. */
  kill(): Promise<void> {
    return this.end("SIGKILL");
  }

  private async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.pid === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    signalGroup(child.pid, signal);
    const timer = setTimeout(() => signalGroup(child.pid as number, "SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}
