#!/usr/bin/env python3
"""Lists the objects of Azurite or fake-gcs-server under a prefix, as JSON lines
[{"Path": key below the prefix, "Size": n}], by their REST APIs: a client of its own, independent
of xbcloud's drivers, for the tests' checks (scripts/lib/objstore.sh: os_store_ls).

  store_ls.py azure PORT CONTAINER PREFIX    (OS_AZ_ACCOUNT, OS_AZ_KEY: Shared Key)
  store_ls.py gcs PORT BUCKET PREFIX
"""
import base64, hashlib, hmac, http.client, json, os, sys, time, urllib.parse
import xml.etree.ElementTree as ET


def azure(port, container, prefix):
    account, key = os.environ["OS_AZ_ACCOUNT"], base64.b64decode(os.environ["OS_AZ_KEY"])
    out, marker = [], ""
    while True:
        params = {"restype": "container", "comp": "list", "prefix": prefix}
        if marker:
            params["marker"] = marker
        date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())
        path = "/%s/%s" % (account, container)
        canon = "".join("\n%s:%s" % (k, params[k]) for k in sorted(params))
        sts = "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:%s\nx-ms-version:2021-08-06\n/%s%s%s" % (date, account, path, canon)
        sig = base64.b64encode(hmac.new(key, sts.encode(), hashlib.sha256).digest()).decode()
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
        c.request("GET", path + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote),
                  headers={"x-ms-date": date, "x-ms-version": "2021-08-06",
                           "Authorization": "SharedKey %s:%s" % (account, sig)})
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit("store_ls: List Blobs: HTTP %d %s" % (r.status, body[:200]))
        root = ET.fromstring(body)
        for b in root.iter("Blob"):
            out.append({"Path": b.findtext("Name")[len(prefix):],
                        "Size": int(b.find("Properties").findtext("Content-Length"))})
        marker = root.findtext("NextMarker") or ""
        if not marker:
            return out


def gcs(port, bucket, prefix):
    out, token = [], ""
    while True:
        params = {"prefix": prefix}
        if token:
            params["pageToken"] = token
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
        c.request("GET", "/storage/v1/b/%s/o?%s" % (bucket, urllib.parse.urlencode(params)))
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit("store_ls: objects.list: HTTP %d %s" % (r.status, body[:200]))
        page = json.loads(body)
        out += [{"Path": o["name"][len(prefix):], "Size": int(o["size"])} for o in page.get("items", [])]
        token = page.get("nextPageToken", "")
        if not token:
            return out


if __name__ == "__main__":
    kind, port, box, prefix = sys.argv[1:5]
    print(json.dumps((azure if kind == "azure" else gcs)(port, box, prefix)))
