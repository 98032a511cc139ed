#!/usr/bin/env bash
# A Neo4j Community server for the tests and CI, fetched from Maven Central (no Docker, no tarball).
#
#   tests/neo4j/server.sh start DIR   # prints the Bolt URI (bolt://127.0.0.1:PORT) as its last line
#   tests/neo4j/server.sh stop DIR
#
# The version is pinned in tests/neo4j/pom.xml; Maven resolves it into ~/.m2 once (about 120 MB), and the
# classpath is kept in DIR/classpath. The server listens on loopback only, on a free port (the previous
# one when it is still free), with authentication on: user neo4j, password $NEO4J_PASSWORD (default
# hypermem-test), set as the initial password when DIR is new. Data, logs and the pid file live under
# DIR, so a second start on the same DIR reuses the data (and that first password). Heap: $NEO4J_HEAP
# (default 768m); page cache: $NEO4J_PAGECACHE (default 256m). Needs Java 17 or 21 and Maven.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
pidfile=$dir/neo4j.pid
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

classpath() {
    # The jars of tests/neo4j/pom.xml, resolved once per pom (offline first: ~/.m2 is the cache).
    local stamp
    stamp=$(sha256sum "$here/pom.xml" | cut -c1-16)
    if [[ -f $dir/classpath && $(cat "$dir/classpath.stamp" 2>/dev/null) == "$stamp" ]] \
        && tr ':' '\n' <"$dir/classpath" | while read -r jar; do [[ -f $jar ]] || exit 1; done; then
        return
    fi
    local mvn_args=(-q -B -f "$here/pom.xml" dependency:build-classpath "-Dmdep.outputFile=$dir/classpath")
    mvn -o "${mvn_args[@]}" >"$dir/maven.log" 2>&1 || mvn "${mvn_args[@]}" >"$dir/maven.log" 2>&1 || {
        echo "Maven could not fetch Neo4j (see $dir/maven.log):" >&2
        tail -n 20 "$dir/maven.log" >&2
        exit 1
    }
    echo "$stamp" >"$dir/classpath.stamp"
}

free_port() {
    # The previous port when it is still free, else one the kernel picks.
    python3 - "$(cat "$dir/port" 2>/dev/null || echo 0)" <<'EOF'
import socket, sys
for port in (int(sys.argv[1]), 0):
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            print(s.getsockname()[1])
            break
    except OSError:
        continue
EOF
}

write_config() {
    local port=$1
    mkdir -p "$dir/conf" "$dir/logs"
    cat >"$dir/conf/neo4j.conf" <<EOF
# Written by tests/neo4j/server.sh on every start.
server.directories.data=$dir/data
server.directories.logs=$dir/logs
server.directories.run=$dir/run
server.directories.import=$dir/import
server.directories.plugins=$dir/plugins
server.default_listen_address=127.0.0.1
server.bolt.listen_address=127.0.0.1:$port
server.bolt.advertised_address=127.0.0.1:$port
server.http.enabled=false
server.https.enabled=false
dbms.security.auth_enabled=true
server.memory.pagecache.size=${NEO4J_PAGECACHE:-256m}
dbms.usage_report.enabled=false
EOF
}

start() {
    if running; then
        cat "$dir/bolt-uri"
        return
    fi
    classpath
    local cp port uri log_lines
    cp=$(cat "$dir/classpath")
    port=$(free_port)
    uri=bolt://127.0.0.1:$port
    write_config "$port"
    export NEO4J_HOME=$dir NEO4J_CONF=$dir/conf
    if [[ ! -d $dir/data/databases/system ]]; then
        "$java" -cp "$cp" org.neo4j.cli.AdminTool dbms set-initial-password "${NEO4J_PASSWORD:-hypermem-test}" \
            >"$dir/logs/set-initial-password.log" 2>&1 || { cat "$dir/logs/set-initial-password.log" >&2; exit 1; }
    fi
    log_lines=0
    [[ -f $dir/logs/neo4j.log ]] && log_lines=$(wc -l <"$dir/logs/neo4j.log")
    setsid "$java" "-Xms${NEO4J_HEAP:-768m}" "-Xmx${NEO4J_HEAP:-768m}" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
        -Dfile.encoding=UTF-8 -cp "$cp" org.neo4j.server.CommunityEntryPoint \
        --home-dir="$dir" --config-dir="$dir/conf" >>"$dir/logs/console.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    echo "$port" >"$dir/port"
    echo "$uri" >"$dir/bolt-uri"
    for _ in $(seq 1 240); do
        if ! running; then
            echo "Neo4j exited while starting; the end of $dir/logs:" >&2
            tail -n 30 "$dir/logs/console.log" "$dir/logs/neo4j.log" >&2 || true
            rm -f "$pidfile"
            exit 1
        fi
        if tail -n "+$((log_lines + 1))" "$dir/logs/neo4j.log" 2>/dev/null | grep -q "Started\.$" \
            && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "Neo4j $(sed -n 's:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p' "$here/pom.xml") started (pid $(cat "$pidfile"), logs in $dir/logs)"
            echo "$uri"
            return
        fi
        sleep 0.5
    done
    echo "Neo4j did not start within 120 s; see $dir/logs" >&2
    stop
    exit 1
}

stop() {
    running || { rm -f "$pidfile"; return; }
    local pid
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 1 120); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return; }
        sleep 0.5
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

case $action in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
