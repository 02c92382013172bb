#!/usr/bin/env python3
"""An independent implementation of xbak's encrypted-file format (docs/backup-encryption.md),
with Python's `cryptography` package instead of xbak's C++ and OpenSSL calls: it decrypts
X.xbenc files, and makes the golden vector the unit tests compare the C++ writer with
(tests/unit/crypt/stream_test.cc). If the two ever disagree, one of them does not follow
the document.

  xbenc_reference.py decrypt KEYFILE FILE.xbenc > plain
  xbenc_reference.py vector            # prints the golden vector's hex
"""
import hashlib
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MAGIC = b"XBAKENC1"
TAG = 16
HEADER_NONCE = 2**64 - 1


def key_id(key):
    return hashlib.sha256(b"xbak key id" + key).digest()[:8]


def file_key(key, algorithm, file_id):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=file_id,
                info=b"xbak file key v1" + bytes([algorithm])).derive(key)


def aead(algorithm, k):
    return AESGCM(k) if algorithm == 1 else ChaCha20Poly1305(k)


def nonce(index):
    return b"\0\0\0\0" + struct.pack(">Q", index)


def header_body(algorithm, chunk_size, kid, backup_id, file_id, path):
    p = path.encode()
    return (MAGIC + bytes([1, algorithm]) + struct.pack(">HI", 58 + len(p) + TAG, chunk_size) + kid +
            backup_id + file_id + struct.pack(">H", len(p)) + p)


def chunk_aad(header_hash, index, last, n):
    return header_hash + struct.pack(">QBI", index, 1 if last else 0, n)


def encrypt(key, algorithm, backup_id, file_id, path, chunk_size, data):
    body = header_body(algorithm, chunk_size, key_id(key), backup_id, file_id, path)
    c = aead(algorithm, file_key(key, algorithm, file_id))
    out = body + c.encrypt(nonce(HEADER_NONCE), b"", body)
    h = hashlib.sha256(body).digest()
    chunks = [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)]
    for i, piece in enumerate(chunks):
        out += struct.pack(">I", len(piece)) + c.encrypt(nonce(i), piece, chunk_aad(h, i, False, len(piece)))
    i = len(chunks)
    out += struct.pack(">I", 0) + c.encrypt(nonce(i), b"", chunk_aad(h, i, True, 0))
    return out


def decrypt(key, blob):
    assert blob[:8] == MAGIC, "not an xbak encrypted file"
    algorithm = blob[9]
    header_len, = struct.unpack(">H", blob[10:12])
    body = blob[:header_len - TAG]
    assert body[16:24] == key_id(key), "another key"
    file_id = body[40:56]
    c = aead(algorithm, file_key(key, algorithm, file_id))
    c.decrypt(nonce(HEADER_NONCE), blob[header_len - TAG:header_len], body)  # raises on a bad tag
    h = hashlib.sha256(body).digest()
    pos, index, out = header_len, 0, b""
    while True:
        n, = struct.unpack(">I", blob[pos:pos + 4])
        sealed = blob[pos + 4:pos + 4 + n + TAG]
        out += c.decrypt(nonce(index), sealed, chunk_aad(h, index, n == 0, n))
        pos += 4 + n + TAG
        index += 1
        if n == 0:
            assert pos == len(blob), "bytes after the end chunk"
            return out


def main():
    if sys.argv[1:2] == ["vector"]:
        key = bytes(range(32))
        blob = encrypt(key, 1, bytes([0xB0] * 16), bytes([0xF1] * 16), "db/t.ibd", 4, b"hello, xbak")
        print(blob.hex())
    elif sys.argv[1:2] == ["decrypt"]:
        raw = open(sys.argv[2], "rb").read()
        key = raw[:-1] if raw.endswith(b"\n") else raw
        sys.stdout.buffer.write(decrypt(key, open(sys.argv[3], "rb").read()))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
