-- wrk script for bench/http_bench.py (Debian's wrk 4.1, LuaJIT).
--
--   wrk -t2 -c64 -d5s -s bench/wrk_bench.lua http://127.0.0.1:PORT -- \
--       MODE RUN_ID ACK_DIR KEY PATH BATCH
--
-- MODE: static      POST PATH with {"query":"{ __typename }"} (GraphQL or the /plain route)
--       append_gql  appendMemoryEvent through POST /graphql, one event per request
--       append_rest POST /memory/events, one event per request
--       batch_gql   appendMemoryEvents through POST /graphql, BATCH events per request
--       batch_rest  POST /memory/events with a JSON array of BATCH events
--       append_keys POST /memory/events, one event per request, each with the next key of
--                   the file KEYS (one a line: requests spread over those tenants)
--       replay_gql  the requests of the file REQUESTS (one a line: METHOD, tab, PATH, tab,
--       replay_rest BODY), in turn; ok: 2xx and (replay_gql) no "errors" in the answer.
--                   For reads: http_bench.py's events workload at 16 clients, where a
--                   Python client would take too much of the two CPUs from the server.
-- Every event carries source "bench" and a sourceRef unique to its request
-- (RUN_ID-THREAD-N). A response that acknowledges the append (2xx, no errors, the
-- sourceRef echoed) counts as ok and its sourceRef (and the number of events it echoed)
-- is written to ACK_DIR/acked-THREAD.txt, line buffered; http_bench.py then checks each
-- one against the tenant database. ACK_DIR "-" writes nothing.
-- done() prints one line "JSON {...}" with the counts and wrk's latency percentiles (us).

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local mode, run_id, key, path, batch
local counter = 0
local ack = nil
local static_request = nil
local replay = nil
local replayed = 0
local keyed = nil
ok = 0
bad = 0
echoed = 0
bad_sample = ""

local REFS = { "acme-outdoor", "bluefin-coffee", "northwind-analytics", "globex-labs",
  "initech-foods", "umbrella-apparel", "hooli-health", "stark-travel", "wayne-home",
  "wonka-pets" }
local KINDS = { "call_summary", "decision", "campaign_change", "sentiment_shift", "note" }
local BODIES = {
  "Call with Dana Whitfield: the Q3 budget of $48,000 was approved. Next review on the 14th;"
    .. " she wants weekly reporting and the blended ROAS target to stay at 4.0.",
  "Decision: move 20% of the display budget to search from April 1. Sam Okafor signed off;"
    .. " the agency commits to a creative refresh within two weeks.",
  "Campaign change: daily cap raised to $1,500 after CPA fell to $31.40.\\n- Frequency in"
    .. " the DACH market is 3.1 over 7 days; watch it.",
  "Sentiment: Elena Brooks was frustrated that the Monday report was late again; we promised"
    .. " delivery by 9am every Monday from now on.",
  "TikTok Spark Ads test with creator videos: CPA $42 against a goal of $55.\\n- Hooks"
    .. " refreshed; gear demo videos had the best thumb-stop rate.",
}

function init(args)
  mode, run_id, ack_dir, key, path = args[1], args[2], args[3], args[4], args[5]
  batch = tonumber(args[6] or "1")
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. key
  if ack_dir ~= "-" then
    ack = io.open(ack_dir .. "/acked-" .. tid .. ".txt", "w")
    ack:setvbuf("line")
  end
  if mode == "static" then
    static_request = wrk.format("POST", path, nil, '{"query":"{ __typename }"}')
  elseif mode == "replay_gql" or mode == "replay_rest" then
    replay = {}
    for line in io.lines(args[7]) do
      local method, rpath, body = line:match("^([^\t]*)\t([^\t]*)\t(.*)$")
      if body == "" then body = nil end
      table.insert(replay, wrk.format(method, rpath, nil, body))
    end
    replayed = tid  -- threads start at different requests of the list
  elseif mode == "append_keys" then
    keyed = {}
    for k in io.lines(args[7]) do
      table.insert(keyed, { ["Content-Type"] = "application/json",
                            ["Authorization"] = "Bearer " .. k })
    end
  end
end

local function event_json(scope, ref, i)
  local n = counter + i
  return string.format(
    '{"scope":"%s","scopeRef":"%s","kind":"%s","body":"%s","source":"bench","sourceRef":"%s"}',
    scope, REFS[n % #REFS + 1], KINDS[n % #KINDS + 1], BODIES[n % #BODIES + 1], ref)
end

local GQL_ONE = 'mutation($i: AppendMemoryEventInput!) { appendMemoryEvent(input: $i)'
  .. ' { event { id sourceRef occurredAt } replayed errors { field code message } } }'
local GQL_MANY = 'mutation($i: [AppendMemoryEventInput!]!) { appendMemoryEvents(input: $i)'
  .. ' { events { id sourceRef } errors { field code message } } }'

function request()
  if static_request then
    return static_request
  end
  if replay then
    replayed = replayed % #replay + 1
    return replay[replayed]
  end
  counter = counter + 1
  local ref = run_id .. "-" .. tid .. "-" .. counter
  local body
  if keyed then
    return wrk.format("POST", path, keyed[(counter + tid) % #keyed + 1], event_json("entity", ref, 0))
  end
  if mode == "append_gql" then
    body = '{"query":"' .. GQL_ONE .. '","variables":{"i":' .. event_json("ENTITY", ref, 0) .. '}}'
  elseif mode == "append_rest" then
    body = event_json("entity", ref, 0)
  else
    local scope = (mode == "batch_gql") and "ENTITY" or "entity"
    local items = {}
    for i = 1, batch do
      items[i] = event_json(scope, ref, i)
    end
    local list = "[" .. table.concat(items, ",") .. "]"
    if mode == "batch_gql" then
      body = '{"query":"' .. GQL_MANY .. '","variables":{"i":' .. list .. '}}'
    else
      body = list
    end
  end
  return wrk.format("POST", path, nil, body)
end

function response(status, headers, body)
  local good = false
  local ref = nil
  local n = 0
  if mode == "static" then
    good = status == 200 and body:find('"__typename":%s*"Query"') ~= nil
      and body:find('"errors"', 1, true) == nil
  elseif replay then
    good = status >= 200 and status < 300
      and (mode == "replay_rest" or body:find('"errors"', 1, true) == nil)
  else
    local want = (mode == "append_gql" or mode == "batch_gql") and 200 or 201
    if status == want then
      ref = body:match('"sourceRef":%s*"([^"]+)"')
      local _, count = body:gsub('"sourceRef":%s*"', "")
      n = count
      local no_errors = true
      if mode == "append_gql" or mode == "batch_gql" then
        no_errors = body:find('"errors":%s*%[%]') ~= nil
          and body:find('^%s*{%s*"errors"') == nil
      end
      good = ref ~= nil and no_errors and n == batch
    end
  end
  if good then
    ok = ok + 1
    echoed = echoed + n
    if ack and ref then
      ack:write(ref, " ", n, "\n")
    end
  else
    bad = bad + 1
    if bad_sample == "" then
      bad_sample = tostring(status) .. " " .. string.sub(body, 1, 300)
    end
  end
end

local function esc(s)
  return (s:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\n", "\\n"):gsub("[%c]", " "))
end

function done(summary, latency, requests)
  local tok, tbad, techoed, sample = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    tok = tok + (t:get("ok") or 0)
    tbad = tbad + (t:get("bad") or 0)
    techoed = techoed + (t:get("echoed") or 0)
    local s = t:get("bad_sample") or ""
    if sample == "" then sample = s end
  end
  local e = summary.errors
  io.write(string.format(
    'JSON {"requests":%d,"duration_us":%d,"bytes":%d,"ok":%d,"bad":%d,"echoed":%d,'
      .. '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d,'
      .. '"lat_mean_us":%.1f,"lat_p50_us":%d,"lat_p90_us":%d,"lat_p95_us":%d,'
      .. '"lat_p99_us":%d,"lat_max_us":%d,"bad_sample":"%s"}\n',
    summary.requests, summary.duration, summary.bytes, tok, tbad, techoed,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(95),
    latency:percentile(99), latency.max, esc(sample)))
end
