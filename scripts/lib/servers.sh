# Throw-away redis-servers on free loopback ports, for the scripts that need a server of their
# own (scripts/test for the doctests, scripts/examples). Sourced, not run:
#
#   . scripts/lib/servers.sh
#   trap redis_stop_all EXIT
#   redis_start                 # appends the new server's port to redis_ports
#   url="redis://127.0.0.1:${redis_ports[0]}"
#
# The servers keep nothing on disk (no RDB, no AOF); their pid and log files live in
# $redis_dir, a temporary directory that redis_stop_all removes with them.

redis_dir=""
redis_ports=()

# Starts one empty redis-server on a free port of 127.0.0.1 (tries random ports in
# 20000-60000), waits until it answers PING and appends its port to redis_ports. Exits the
# calling script if no server could be started.
redis_start() {
  local p
  [ -n "$redis_dir" ] || redis_dir=$(mktemp -d)
  for _ in $(seq 50); do
    p=$(shuf -i 20000-60000 -n 1)
    if redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$redis_dir" \
        --daemonize yes --pidfile "$redis_dir/$p.pid" --logfile "$redis_dir/$p.log" >/dev/null 2>&1; then
      for _ in $(seq 100); do
        if redis-cli -p "$p" ping 2>/dev/null | grep -q PONG; then redis_ports+=("$p"); return 0; fi
        sleep 0.05
      done
      # Started but never answered: not one to keep.
      [ -f "$redis_dir/$p.pid" ] && kill "$(cat "$redis_dir/$p.pid")" 2>/dev/null
    fi
  done
  echo "$(basename "$0"): could not start a redis-server" >&2
  exit 1
}

# Stops every server redis_start started, waits (up to about 2 s) for them to exit, and removes
# redis_dir. Harmless to call twice.
redis_stop_all() {
  local p pids=()
  for p in "${redis_ports[@]}"; do
    [ -f "$redis_dir/$p.pid" ] && pids+=("$(cat "$redis_dir/$p.pid")")
  done
  [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  for p in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.02; done
  done
  redis_ports=()
  [ -n "$redis_dir" ] && rm -rf "$redis_dir"
  redis_dir=""
  return 0
}
