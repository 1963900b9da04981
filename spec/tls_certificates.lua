-- Certificates for the TLS specs, made by openssl.
local H = require "spec.helpers"

-- Makes, in dir, a CA (ca.crt), a server certificate it signed for localhost and
-- 127.0.0.1 (server.crt, server.key), a client certificate it signed (client.crt,
-- client.key), and another CA that signed nothing here (other.crt).
return function(dir)
    local script = string.format([[
set -e
cd %s
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=luaworker spec CA"
openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.crt -days 2 -subj "/CN=another CA"
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext
openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=luaworker"
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2
]], H.quote(dir))
    assert(os.execute("bash -c " .. H.quote(script) .. " >/dev/null 2>&1"), "openssl could not make the certificates")
end
