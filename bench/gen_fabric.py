#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate topology files that both softibd (docs/topology.md) and ibsim load.

Owns the benchmark and test fabrics: two-level fat trees and chains of
switches.  The output is the common subset of the two parsers: one record per
node, a `switchguid=`/`caguid=` line before it (softib: this node's GUID;
ibsim: the running base, which is the same thing when every node has one),
ids in ibnetdiscover style ("S-<guid>", "H-<guid>") and every link written
from both ends (ibsim requires that).  The first record is a CA, host 0:
ibsim attaches its first client (the SM) to the first port in the file and
softibd makes it softib0.  No IBA section; only the file layout.

Usage:
  gen_fabric.py fattree LEAVES SPINES HCAS_PER_LEAF PORTS
  gen_fabric.py chain SWITCHES HCAS_PER_SWITCH [PORTS [LINKS]]
Writes to stdout (or -o FILE).

Fat tree: every leaf switch has HCAS_PER_LEAF one-port CAs on ports
1..HCAS_PER_LEAF and U uplinks on the following ports, where
U = min(PORTS - HCAS_PER_LEAF, SPINES * PORTS // LEAVES): as many as the leaf
has free ports and the spines can take.  The uplinks go round-robin over
the spines (uplink g = leaf * U + j of the whole fabric goes to spine
(g + g // SPINES) % SPINES, the extra shift once per round keeps the
fabric connected when U divides SPINES), so every spine carries the same
load within one link; U > SPINES gives parallel links.
Chain: SWITCHES switches in a row, LINKS (default 1) parallel links between
neighbours, HCAS_PER_SWITCH CAs on each.
"""
import argparse
import sys

CA_BASE = 0x5EED010000000000  # CA i: CA_BASE + (i + 1) * 16, port 1 = +1
SW_BASE = 0x5EED020000000000  # switch j: SW_BASE + (j + 1) * 16
MAX_PORTS = 254               # softib's and IBA's limit per node


def ca_guid(i):
    return CA_BASE + (i + 1) * 16


def sw_guid(j):
    return SW_BASE + (j + 1) * 16


class Fabric:
    """Nodes (kind, nports, guid, description) and links between (node, port)."""

    def __init__(self):
        self.nodes = []   # [kind, nports, guid, desc]
        self.peer = {}    # (node index, port) -> (node index, port)

    def add(self, kind, nports, guid, desc):
        if not 1 <= nports <= MAX_PORTS:
            sys.exit(f"gen_fabric: {nports} ports per node (1..{MAX_PORTS})")
        self.nodes.append([kind, nports, guid, desc])
        return len(self.nodes) - 1

    def link(self, a, pa, b, pb):
        for n, p in ((a, pa), (b, pb)):
            if (n, p) in self.peer or not 1 <= p <= self.nodes[n][1]:
                sys.exit(f"gen_fabric: port {p} of node {n} used twice or out of range")
        self.peer[(a, pa)] = (b, pb)
        self.peer[(b, pb)] = (a, pa)

    def node_id(self, n):
        kind, _, guid, _ = self.nodes[n]
        return ("S-" if kind == "Switch" else "H-") + f"{guid:016x}"

    def write(self, out, header):
        for line in header:
            out.write(f"# {line}\n")
        out.write("\n")
        for n, (kind, nports, guid, desc) in enumerate(self.nodes):
            key = "switchguid" if kind == "Switch" else "caguid"
            out.write(f"{key}=0x{guid:x}\n")
            comment = f'\t\t# "{desc}"' if desc else ""
            out.write(f'{kind}\t{nports} "{self.node_id(n)}"{comment}\n')
            for p in range(1, nports + 1):
                if (n, p) in self.peer:
                    r, rp = self.peer[(n, p)]
                    out.write(f'[{p}]\t"{self.node_id(r)}"[{rp}]\n')
            out.write("\n")

    def counts(self):
        sw = sum(1 for k in self.nodes if k[0] == "Switch")
        return sw, len(self.nodes) - sw, len(self.peer) // 2


def fattree(leaves, spines, hcas, ports):
    if min(leaves, spines, hcas) < 1 or hcas >= ports:
        sys.exit("gen_fabric: fattree needs LEAVES, SPINES, HCAS >= 1 and HCAS < PORTS")
    up = min(ports - hcas, spines * ports // leaves)
    if up < 1:
        sys.exit(f"gen_fabric: {spines} spines of {ports} ports cannot take {leaves} leaves")
    f = Fabric()
    # Host 0 first (the SM's node for ibsim), then the switches, then the
    # other hosts, so that CAs keep host order as softib0, softib1, ...
    cas = [f.add("Ca", 1, ca_guid(0), "")]
    leaf = [f.add("Switch", ports, sw_guid(l), f"leaf {l}") for l in range(leaves)]
    spine = [f.add("Switch", ports, sw_guid(leaves + s), f"spine {s}") for s in range(spines)]
    cas += [f.add("Ca", 1, ca_guid(i), "") for i in range(1, leaves * hcas)]
    for l in range(leaves):
        for h in range(hcas):
            f.link(cas[l * hcas + h], 1, leaf[l], h + 1)
    used = [0] * spines
    for l in range(leaves):
        for j in range(up):
            g = l * up + j
            s = (g + g // spines) % spines
            used[s] += 1
            if used[s] > ports:
                sys.exit(f"gen_fabric: spine {s} needs more than {ports} ports")
            f.link(leaf[l], hcas + 1 + j, spine[s], used[s])
    return f


def chain(switches, hcas, ports, links):
    if switches < 1 or hcas < 0 or links < 1:
        sys.exit("gen_fabric: chain needs SWITCHES >= 1, HCAS >= 0, LINKS >= 1")
    if hcas + 2 * links > ports:
        sys.exit(f"gen_fabric: {hcas} CAs and 2x{links} links do not fit {ports} ports")
    f = Fabric()
    total = switches * hcas
    cas = [f.add("Ca", 1, ca_guid(0), "")] if total else []
    sw = [f.add("Switch", ports, sw_guid(j), f"chain {j}") for j in range(switches)]
    cas += [f.add("Ca", 1, ca_guid(i), "") for i in range(1, total)]
    for j in range(switches):
        for h in range(hcas):
            f.link(cas[j * hcas + h], 1, sw[j], h + 1)
        if j + 1 < switches:
            for k in range(links):
                # right side: ports after the CAs; left side: after those
                f.link(sw[j], hcas + 1 + k, sw[j + 1], hcas + links + 1 + k)
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    sub = ap.add_subparsers(dest="kind", required=True)
    ft = sub.add_parser("fattree", help="two-level fat tree of one-port CAs")
    for a in ("leaves", "spines", "hcas_per_leaf", "ports"):
        ft.add_argument(a, type=int)
    ch = sub.add_parser("chain", help="switches in a row")
    ch.add_argument("switches", type=int)
    ch.add_argument("hcas_per_switch", type=int)
    ch.add_argument("ports", type=int, nargs="?", default=36)
    ch.add_argument("links", type=int, nargs="?", default=1)
    a = ap.parse_args()
    if a.kind == "fattree":
        f = fattree(a.leaves, a.spines, a.hcas_per_leaf, a.ports)
        what = f"fattree {a.leaves} {a.spines} {a.hcas_per_leaf} {a.ports}"
    else:
        f = chain(a.switches, a.hcas_per_switch, a.ports, a.links)
        what = f"chain {a.switches} {a.hcas_per_switch} {a.ports} {a.links}"
    sw, ca, links = f.counts()
    header = [f"bench/gen_fabric.py {what}",
              f"{sw} switches, {ca} CAs, {links} links; format: docs/topology.md",
              "(the subset that softibd and ibsim both read)"]
    if a.output:
        with open(a.output, "w") as out:
            f.write(out, header)
    else:
        f.write(sys.stdout, header)


if __name__ == "__main__":
    main()
