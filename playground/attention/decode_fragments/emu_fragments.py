#!/usr/bin/env python3
# Run: python3 playground/attention/decode_fragments/emu_fragments.py (prints True when they agree).
# CPU emulation of ldmatrix x4 (.trans) address maps in mma_fragments.cuh vs the element maps of
# the former lds32 / 16-bit reads of decode_mma.cuh (which passed the GPU tests).
D=128; L=D+8
def elem(addr): return addr  # element index in smem
def ldsm(addr_of_lane, trans):
    rows=[addr_of_lane(l) for l in range(32)]
    out=[[None]*4 for _ in range(32)]
    for m in range(4):
        base=rows[8*m:8*m+8]
        for l in range(32):
            g,t=l//4,l%4
            if not trans: out[l][m]=(base[g]+2*t, base[g]+2*t+1)
            else: out[l][m]=(base[2*t]+g, base[2*t+1]+g)
    return out
ok=True
for mt in range(4):
  for kk in range(D//16):
    a=ldsm(lambda l:(mt*16+(l&15))*L+kk*16+(l>>4)*8, False)
    for l in range(32):
      g,q=l>>2,l&3
      r=(mt*16+g)*L+kk*16+q*2
      exp=[(r,r+1),(r+8*L,r+8*L+1),(r+8,r+9),(r+8*L+8,r+8*L+9)]
      ok&= a[l]==exp
for c in range(4):
  for kk in range(D//16):
    b=ldsm(lambda l:(c*16+(l&7)+((l>>4)<<3))*L+kk*16+((l>>3)&1)*8, False)
    for l in range(32):
      g,q=l>>2,l&3
      for nt in range(2):
        r=(c*16+nt*8+g)*L+kk*16+q*2
        ok&= b[l][2*nt]==(r,r+1) and b[l][2*nt+1]==(r+8,r+9)
  for n16 in range(D//16):
    b=ldsm(lambda l:(c*16+(l&7)+((l>>3)&1)*8)*L+n16*16+(l>>4)*8, True)
    for l in range(32):
      g,q=l>>2,l&3
      for h in range(2):
        n=2*n16+h
        v0=(c*16+q*2)*L+g+n*8
        ok&= b[l][2*h]==(v0,v0+L) and b[l][2*h+1]==(v0+8*L,v0+9*L)
# bank check: 8 row addresses of each matrix, 16 bytes each, distinct 4-bank groups
for Dd in (64,128,256):
  Ld=Dd+8
  banks=sorted(((r*Ld*2)//4)%32//4 for r in range(8))
  ok&= banks==list(range(8))
print("fragment maps equal:", ok)
