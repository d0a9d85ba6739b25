#!/usr/bin/env python3
"""Completes package-lock.json for `npm ci` on this workplace's registry.

The registry serves no packages for other platforms (e.g. @node-llama-cpp/win-x64 answers 404), so `npm install`
writes a lock without their entries and `npm ci` then refuses it as out of sync. This adds each missing optional
dependency as an os/cpu-restricted entry that npm ci skips on Linux x64 without fetching it.
Run after every `npm install`: python3 .ci/complete-lockfile.py package-lock.json
"""
import json, re, sys

p=sys.argv[1]
d=json.load(open(p))
pk=d['packages']
added=[]
for path,meta in list(pk.items()):
    for name,ver in (meta.get('optionalDependencies') or {}).items():
        key='node_modules/'+name
        if key in pk: continue
        # platform from the name
        n=name.split('/')[-1]
        os_='darwin' if ('darwin' in n or 'mac' in n) else 'win32' if 'win' in n else 'linux' if 'linux' in n else None
        cpu='arm64' if 'arm64' in n else 'riscv64' if 'riscv64' in n else 'arm' if re.search(r'-arm(v7l)?$',n) else 'x64' if 'x64' in n else None
        if os_ is None or cpu is None: print('skip',name); continue
        pk[key]={'version':ver.lstrip('^~'),'cpu':[cpu],'os':[os_],'optional':True}
        added.append((name,ver,os_,cpu))
d['packages']=dict(sorted(pk.items(), key=lambda kv: (kv[0]!='', kv[0])))
json.dump(d,open(p,'w'),indent=2); open(p,'a').write('\n')
for a in added: print('added',*a)
