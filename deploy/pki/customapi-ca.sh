#!/bin/sh
# Issues customapi's CA from your own root CA: writes ca.crt and ca.key
# (ECDSA P-256; the key in SEC 1 form, "EC PRIVATE KEY", the one form
# customapi reads) into the current directory. customapi signs its serving
# certificate and the client certificates of `customapi kubeconfig` with
# it, and trusts the client certificates it signed.
#
#   sh customapi-ca.sh root.crt root.key [DAYS]
set -eu
root_crt=$1
root_key=$2
days=${3:-1825}
umask 077
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -new -key ca.key -subj /CN=customapi-ca -out ca.csr
cat > ca.ext <<'EXT'
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EXT
openssl x509 -req -in ca.csr -CA "$root_crt" -CAkey "$root_key" -CAcreateserial \
  -days "$days" -sha256 -extfile ca.ext -out ca.crt
rm ca.csr ca.ext
openssl verify -CAfile "$root_crt" ca.crt
