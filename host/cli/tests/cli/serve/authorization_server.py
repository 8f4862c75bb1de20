"""An authorization server's side, for the gateway's OAuth tests: makes an
EC P-256 key, writes its JWKS to DIR/jwks.json, and prints access tokens
(good ones and bad ones of every kind) as a JSON object.

Usage: jwt.py DIR ISSUER AUDIENCE
"""

import json
import sys
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

directory, issuer, audience = sys.argv[1:4]
key = ec.generate_private_key(ec.SECP256R1())
other = ec.generate_private_key(ec.SECP256R1())
public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
public.update({"kid": "k1", "use": "sig", "alg": "ES256"})
with open(f"{directory}/jwks.json", "w") as out:
    json.dump({"keys": [public]}, out)

now = int(time.time())


def claims(**changes):
    base = {"iss": issuer, "aud": audience, "exp": now + 3600, "iat": now,
            "scope": "tools other", "client_id": "ci"}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def signed(payload, signer=key, alg="ES256", kid="k1"):
    return jwt.encode(payload, signer, algorithm=alg, headers={"kid": kid})


tokens = {
    "good": signed(claims()),
    "expired": signed(claims(exp=now - 3600)),
    "wrong_issuer": signed(claims(iss="https://elsewhere.example")),
    "wrong_audience": signed(claims(aud="https://other-resource.example/mcp")),
    "no_expiry": signed(claims(exp=None)),
    "wrong_key": signed(claims(), signer=other),
    "unknown_kid": signed(claims(), kid="k2"),
    "hs256": jwt.encode(claims(), "a shared secret of thirty-two bytes!", algorithm="HS256", headers={"kid": "k1"}),
    "none": jwt.encode(claims(), None, algorithm="none"),
    "no_scope": signed(claims(scope="other")),
    "unknown_client": signed(claims(client_id="stranger")),
    "no_client": signed(claims(client_id=None)),
}
print(json.dumps(tokens))
