import sys, json, time
sys.path.insert(0, "/tmp/probeF/clients/python")
import acpnorm_client
from acpnorm.v1 import normalizer_pb2 as pb
lines=[json.loads(l) for l in open("/tmp/probeF/test/testdata/recordings/codex-acp-0.16.0_shell-command_terminal-meta.ndjson") if l.strip()][:16]
sid=lines[15]['msg']['params']['sessionId']
chunk="x"*1023+"\n"
with acpnorm_client.SessionClient(["127.0.0.1:50641"]) as c:
    for n in (1000,2000,4000):
        s=c.session(f"q{n}")
        t=time.time()
        for r in lines:
            d=pb.DIRECTION_AGENT_TO_CLIENT if r['dir']=='agent->client' else pb.DIRECTION_CLIENT_TO_AGENT
            s.send(d, json.dumps(r['msg']).encode())
        m=json.dumps({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":sid,"update":{"sessionUpdate":"tool_call_update","toolCallId":"call_exit3_3","_meta":{"terminal_output":{"terminal_id":"call_exit3_3","data":chunk}}}}}).encode()
        for i in range(n): s.send(pb.DIRECTION_AGENT_TO_CLIENT, m)
        s.flush(timeout=120)
        print(f"python SessionClient n={n}: {time.time()-t:.2f}s, output {len(s.call('call_exit3_3').output.text)} bytes")
