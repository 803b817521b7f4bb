import sys
sys.path.insert(0, "/tmp/probeF/clients/python")
import acpnorm_client
from acpnorm.v1 import normalizer_pb2 as pb
msg=b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
with acpnorm_client.SessionClient(["127.0.0.1:50621"], max_requests=2) as c:
    s=c.session("s1")
    s.send(pb.DIRECTION_CLIENT_TO_AGENT, msg); s.send(pb.DIRECTION_CLIENT_TO_AGENT, msg)
    try:
        s.close(timeout=5); print("python close: ok")
    except Exception as e:
        print("python close raised:", type(e).__name__, e)
