/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** Profile streams: the grammar of what the profilers write and its
** numbers, one definition for the writers here and the reader in
** tools/ljprof. Self-contained C (the reader has no LuaJIT), hence no
** LuaJIT types or headers. What the fields mean and how the writers fill
** them: docs/formats.md.
*/

#ifndef _LJ_PROFSTREAM_H
#define _LJ_PROFSTREAM_H

#include <stdint.h>

/*
** A profile is a symbol table and one profiler's stream:
**
** stream          := symtab (memprof | sysprof) | heapsnap
**
** <BYTE>          one byte
** <ULEB128>       unsigned LEB128, at most 10 bytes for 64 bits
** <STRING>        <ULEB128> length, then that many bytes, no terminator
** x{n}            n times x
** (vN)            first in version N of the section; absent before
**
** Each section opens with a prologue: 3 magic bytes, the version, three
** reserved bytes. Bits of a byte are listed high to low.
**
** -- Symbol table: 'ljs' v3 (the reference's) --
**
** symtab          := 'l' 'j' 's' version reserved sym* sym-end
** version         := <BYTE>
** reserved        := 0x00 0x00 0x00
** sym             := sym-header sym-entry
** sym-header      := <BYTE>
** sym-entry       := sym-lfunc | sym-cfunc | sym-trace
** sym-lfunc       := proto-addr chunk-name first-line
** sym-cfunc       := code-addr sym-name
** sym-trace       := trace-no proto-addr line-no
** sym-end         := 0x80
** proto-addr      := <ULEB128>
** code-addr       := <ULEB128>
** trace-no        := <ULEB128>
** first-line      := <ULEB128>    -1 (built-ins) as 64-bit two's complement
** line-no         := <ULEB128>
** chunk-name      := <STRING>
** sym-name        := <STRING>
**
** sym-header: [F UUUUU TT]
**   TT     the entry: SYMTAB_LFUNC, SYMTAB_CFUNC or SYMTAB_TRACE
**   UUUUU  0
**   F      1 in sym-end only (SYMTAB_FINAL)
**
** The profilers' symtab updates carry a sym-entry without its header.
**
** -- Labels (sysprof v4, memprof v6) --
**
** label-set       := nlabels label{nlabels}
** label           := label-key label-value
** nlabels, set-no := <ULEB128>
** label-key, label-value := <STRING>
**
** A stream numbers the label sets it names from 1, in the order it
** announces them (set-no), each before the first record that puts it in
** force. A labels record puts a set in force for what follows until the
** next one: 0 none (as at the start), LJ_LABELS_OTHER the sets past the
** stream's LJ_LABELSETS_MAX, folded into one. A set holds 1 to
** LJ_LABELS_MAXN labels, sorted by the key's bytes, keys distinct, of 1 to
** LJ_LABEL_MAXKEY bytes, values of 0 to LJ_LABEL_MAXVALUE (any bytes).
**
** -- Memory profiler: 'ljm' v3 (the reference's), v4, v5 and v6 --
**
** memprof         := 'l' 'j' 'm' version reserved event* ev-end
** event           := ev-alloc | ev-free | ev-realloc | ev-update
** ev-alloc        := ev-header loc stack-id? naddr nsize weight?
** ev-free         := ev-header loc oaddr osize
** ev-realloc      := ev-header loc stack-id? oaddr osize naddr nsize
** ev-update       := ev-header update
** ev-header       := <BYTE>
** ev-end          := 0x80
** loc             := loc-int | loc-lua | loc-cfunc | loc-trace | loc-line
**                  | loc-vm                                      (v4)
** loc-int         :=
** loc-lua         := proto-addr line-no
** loc-cfunc       := code-addr
** loc-trace       := trace-no
** loc-line        := line-id                                     (v4)
** loc-vm          := vm-kind jit-site?                           (v4)
** jit-site        := trace-no proto-addr line-no
** update          := sym-lfunc | sym-cfunc | sym-trace
**                  | trace-line                                  (v4)
**                  | stack | info                                (v5)
** trace-line      := line-id trace-no proto-addr line-no
** stack           := stack-id depth frame{depth}
** frame           := 0x01 proto-addr line-no | 0x02 code-addr
**                  | 0x03 | 0x04 code-addr
** info            := 0x00 config-flags sample-bytes
**                  | 0x01 nstacks nfull ntruncated nsampled nuntracked
**                    nfolded                                     (v6)
**                  | 0x02 nanoseconds
**                  | 0x03 snapshot-id nanoseconds
**                  | 0x04 process
**                  | 0x05 set-no label-set                       (v6)
**                  | 0x06 set-no                                 (v6)
** process         := pid host-name epoch-ns
** stack-id, line-id, vm-kind, depth, weight, naddr, nsize, oaddr, osize,
** config-flags, sample-bytes, nstacks, nfull, ntruncated, nsampled,
** nuntracked, nfolded, nanoseconds, snapshot-id, pid, epoch-ns := <ULEB128>
** host-name := <STRING>
**
** ev-header: [F UU SSS EE]
**   EE     the event (AEVENT_*): symtab update, alloc, free, realloc
**   SSS    an event's source (ASOURCE_*), which picks its loc: the VM
**          itself, a Lua line, a C function, a trace, a trace's line (v4),
**          the VM itself of a known kind (v4); an update's kind: a Lua function, C symbol or trace (as in the
**          symtab), a trace's line (v4), a stack or an info record (v5)
**   UU     0 before v5; AFLAG_STACK: a stack id follows the location
**          (alloc, realloc), AFLAG_WEIGHT: a weight the payload (alloc);
**          0 on updates
**   F      1 in ev-end only (LJM_EPILOGUE_HEADER)
**
** A loc-vm's kind is LJM_VM_*: the trace compiler at work (a jit-site
** follows: the trace it compiles, 0 before it has a number or once it
** was aborted, and where that trace starts, proto 0 and line
** LJM_LINE_UNKNOWN while not known), the GC, a trace exit, a coroutine's
** stack moved; the writer names them on allocs and reallocs (its frees
** keep ASOURCE_INT). Sources 6 and 7 are an update's kinds and ASOURCE_VM an
** event's: a reader that knows neither calls such an event damage.
**
** Trace lines and stacks are numbered in the order they are announced,
** each before the first event that names it: lines from 0, stacks from 1
** (stack 0, LJM_STACK_FULL, is never announced). A stack has 1 to
** LJM_STACK_DEPTH_MAX frames, innermost first: LJM_FRAME_*, the marker
** LJM_FRAME_TRUNC last only; a Lua frame's line is LJM_LINE_UNKNOWN when
** none is known. Info records: LJM_INFO_*; config flags: LJM_CONFIG_*.
** Labels (v6): an alloc or realloc with a stack or a weight was made under
** the set in force (LJM_INFO_LABELS); others carry none. nfolded: the
** distinct sets folded into LJ_LABELS_OTHER (LJ_LABELS_FOLDMAX: as many
** or more).
**
** -- Heap snapshot: 'ljh' v1 (ours) --
**
** heapsnap        := 'l' 'j' 'h' version reserved hs-config hs-memprof?
**                    hs-record* hs-info hs-end
** hs-config       := flags strings-max upval-size
** hs-memprof      := 0x14 snapshot-id
** hs-record       := hs-roots | hs-object | hs-ctype | hs-name
** hs-roots        := 0x10 hs-edge* 0x00
** hs-ctype        := 0x11 ctype-id ctype-name
** hs-name         := 0x13 object-id content
** hs-info         := 0x12 nanoseconds nobjects nedges nbytes
** hs-end          := 0x80
** hs-object       := obj-header addr-delta obj-body
** obj-body        := len extra content?                        string
**                  | closed hs-edge* 0x00                      upvalue
**                  | size status hs-edge* 0x00                 thread
**                  | size first-line numline nuv uv-name{nuv}
**                    hs-edge* 0x00                             proto
**                  | size hs-edge* 0x00                        Lua function
**                  | size code-addr ffid hs-edge* 0x00         C function
**                  | size trace-no hs-edge* 0x00               trace
**                  | size ctype-id                             cdata
**                  | size asize hsize hs-edge* 0x00            table
**                  | size udtype hs-edge* 0x00                 userdata
** hs-edge         := edge-kind edge-name target
** edge-name       :=                  META ENV VALUE PROTO CHUNK TRACE
**                  | index            ARRAY UPVAL KGC
**                  | key-ref          HSTR HOBJ
**                  | zigzag           HINT
**                  | bits             HNUM (a double's bits)
**                  | 0x00 | 0x01      HBOOL
**                  | pointer          HLIGHT
**                  | line             FRAME (0: not known)
**                  | slot slot-name   SLOT
**                  | root-kind arg    ROOT
** target          := <ULEB128>        0 none, 1 a new object, id + 2
** key-ref         := <ULEB128>        as target, never 0
** content         := <STRING>         if the header has LJH_CONTENT
** uv-name, ctype-name, slot-name := <STRING>
** addr-delta      := <ULEB128>        zigzag: address - previous address
** closed, status  := <BYTE>
** flags, strings-max, upval-size, nobjects, nedges, nbytes, len, extra,
** size, numline, nuv, asize, hsize, ctype-id, ffid, udtype,
** index, zigzag, bits, pointer, line, slot, root-kind, arg,
** object-id, snapshot-id := <ULEB128>
**
** Objects are numbered from 0 in the order a target or key-ref first
** names them (1, a new object), and their records follow in that order:
** the walk is breadth-first from the roots. obj-header: [0 WW 0 TTTT],
** TTTT the type (LJH_OBJ_*), WW a table's weak keys and values; for a
** string, W (LJH_CONTENT): its contents follow, the first strings-max
** bytes, or LJH_NAME_MAX for a string that names (a key, a chunk name),
** always written. A name record gives the contents of a string named so
** after its record was written. A string takes len + extra bytes, an
** upvalue upval-size. A thread's slots follow the FRAME edge of the
** frame they belong to.
**
** -- Platform profiler: 'ljp' v3, v4 (ours) and v2 (the reference's) --
**
** sysprof         := 'l' 'j' 'p' version reserved record* sp-end
** sp-end          := 0x80
**
** v3, v4:
** record          := sample | sp-update | ffname | config | stats
**                  | jit-event | sp-process
**                  | sp-labelset | sp-labels | sp-labelcounts     (v4)
** sample          := vmstate jit-context? frame* 0x80
** vmstate         := <BYTE>                       0 ... 9, 0x45 ... 0x48
** jit-context     := trace-no exit-no
** frame           := 0x01 proto-addr line-no
**                  | 0x02 code-addr
**                  | 0x03 ff-id
**                  | 0x04 code-addr
**                  | 0x05 trace-no proto-addr line-no
**                  | 0x06 trace-no proto-addr line-no nlua
** sp-update       := 0x0a sym-lfunc | 0x0b sym-cfunc | 0x0c sym-trace
** ffname          := 0x0d ff-id ff-name
** config          := 0x0e mode interval clock
** sp-process      := 0x17 process
** stats           := 0x0f nsamples count{10} ndropped noverruns elapsed
**                    nfolded                                     (v4)
** sp-labelset     := 0x18 set-no label-set
** sp-labels       := 0x19 set-no
** sp-labelcounts  := 0x1a nsets (set-no nsamples){nsets}
** jit-event       := jit | trace-start | trace-end | trace-abort
**                  | blacklist | flush | exits
** jit             := 0x16 jit-on
** trace-start     := 0x10 trace-no kind from exit-no proto-addr line-no
** trace-end       := 0x11 trace-no link-type link nins nmcode
** trace-abort     := 0x12 trace-no proto-addr line-no error reason
** blacklist       := 0x13 proto-addr line-no
** flush           := 0x14 why
** exits           := 0x15 nexits exit{nexits}
** exit            := trace-no exit-no count proto-addr line-no
** ff-id, nlua, mode, interval, clock, nsamples, count, ndropped,
** noverruns, elapsed, nfolded, nsets, jit-on, kind, from, exit-no, link-type, link, nins,
** nmcode, error, why, nexits := <ULEB128>
** ff-name, reason := <STRING>
**
** v2:
** record          := sample2 | sp-update
** sample2         := 0x09 trace-no proto-addr first-line
**                  | (0x01 | 0x02 | 0x03) luaframe* 0x80 host-addr* 0x00
**                  | (0x00 | 0x04 ... 0x08) host-addr* 0x00
** luaframe        := 0x01 proto-addr first-line | 0x02 code-addr
**                  | 0x03 ff-id
** host-addr       := <ULEB128>                                   not 0
**
** A sample's first byte is the VM state (LJP_VMST_*), its frames come
** innermost first (LJP_FRAME_*); a v3 Lua frame's line is
** LJP_LINE_UNKNOWN when none is known. Tag 0x05 is in streams written
** before tag 0x06 only. A sample in a trace exit or the compiler (EXIT,
** RECORD, OPT, ASM) has LJP_SAMPLE_JIT set in its first byte and says
** which trace exits and where, or which trace is being compiled (exit-no
** 0). The compiler's events come as it makes them, among the samples:
** a sample in RECORD, OPT or ASM is of the last trace started; the jit
** record once, after the config. A trace starts as a root trace, a side
** trace of trace `from` at its exit, or stitched to trace `from`
** (LJP_TRACE_*); it ends linked as LuaJIT's LJ_TRLINK_* says, with nins IR
** instructions and nmcode bytes of machine code, or is aborted with
** LuaJIT's LJ_TRERR_* error and the reason as -jv prints it, where
** recording stopped. A flush says LJP_FLUSH_*. Exits are counts since
** the last exits record, where each exit resumes, written before a trace
** number with counts pending is given again (a trace-start) and at the
** end. Records: REC_*; the config's mode (LJP_MODE_*),
** interval (microseconds) and clock (LJP_CLOCK_*); the stats' counts by
** VM state. Labels (v4): a sample was taken under the set in force
** (sp-labels); mode D writes no samples but, before its stats, the
** samples by set (sp-labelcounts: sets without samples left out).
*/

/* -- Symbol table -------------------------------------------------------- */

#define LJS_VERSION		3

/* The low bits of an entry's header byte: its type; or the end. */
#define SYMTAB_LFUNC		((uint8_t)0)
#define SYMTAB_CFUNC		((uint8_t)1)
#define SYMTAB_TRACE		((uint8_t)2)
#define SYMTAB_TYPE_MASK	((uint8_t)3)
#define SYMTAB_FINAL		((uint8_t)0x80)

/* -- Labels -------------------------------------------------------------- */

#define LJ_LABELS_NONE		0	/* set-no: no labels in force. */
#define LJ_LABELS_OTHER		0xffffffffu	/* The sets folded. */
#define LJ_LABELSETS_MAX	1024	/* Sets a stream names; past: folded. */
#define LJ_LABELS_FOLDMAX	2048	/* Folded sets a writer tells apart. */
#define LJ_LABELS_MAXN		16	/* As lmisclib.h's LUAM_LABEL_*. */
#define LJ_LABEL_MAXKEY		64
#define LJ_LABEL_MAXVALUE	255

/* -- Memory profiler ----------------------------------------------------- */

/* 3 is the reference's; 4 adds ASOURCE_TRACE_LUA and ASOURCE_VM; 5 adds
** call stacks and sampled events; 6 labels. */
#define LJM_VERSION_REFERENCE	3
#define LJM_VERSION		4
#define LJM_VERSION_STACKS	5
#define LJM_VERSION_LABELS	6

/* Event header: [F UU SSS EE], high bit to low. */
#define AEVENT_SYMTAB		((uint8_t)0)
#define AEVENT_ALLOC		((uint8_t)1)
#define AEVENT_FREE		((uint8_t)2)
#define AEVENT_REALLOC		((uint8_t)(AEVENT_ALLOC | AEVENT_FREE))
#define AEVENT_MASK		((uint8_t)3)

#define ASOURCE_INT		((uint8_t)(1 << 2))
#define ASOURCE_LFUNC		((uint8_t)(2 << 2))
#define ASOURCE_CFUNC		((uint8_t)(3 << 2))
#define ASOURCE_TRACE		((uint8_t)(4 << 2))
#define ASOURCE_TRACE_LUA	((uint8_t)(5 << 2))	/* Trace location. */
/* Symtab updates of version 5 only. */
#define ASOURCE_STACK		((uint8_t)(6 << 2))	/* A call stack. */
#define ASOURCE_INFO		((uint8_t)(7 << 2))	/* Config or stats. */
/* Events of version 4 and 5 only: the VM's own, of a kind. */
#define ASOURCE_VM		((uint8_t)(6 << 2))
#define ASOURCE_MASK		((uint8_t)(7 << 2))

/* Kinds of the VM's own events: the compiler's first, a jit-site after
** them; then kinds without fields. */
#define LJM_VM_RECORD		0	/* The recorder, */
#define LJM_VM_OPT		1	/* the optimiser, */
#define LJM_VM_ASM		2	/* the assembler: a jit-site follows. */
#define LJM_VM_GC		3	/* The garbage collector. */
#define LJM_VM_EXIT		4	/* A trace exit (its snapshot restored). */
#define LJM_VM_STACK		5	/* A coroutine's stack moved. */
#define LJM_VM__MAX		6

/* Event flags of version 5: a stack id follows the location; a weight
** follows the payload (a sampled allocation). */
#define AFLAG_STACK		((uint8_t)0x20)
#define AFLAG_WEIGHT		((uint8_t)0x40)
#define AFLAG_MASK		((uint8_t)(AFLAG_STACK | AFLAG_WEIGHT))

/* Frames of a stack record; info records. */
#define LJM_FRAME_LUA		1	/* Proto address, line. */
#define LJM_FRAME_CFUNC		2	/* C function address. */
#define LJM_FRAME_TRUNC		3	/* Frames left out below. */
#define LJM_FRAME_NATIVE	4	/* Code address (native stacks). */
#define LJM_INFO_CONFIG		0
#define LJM_INFO_STATS		1
#define LJM_INFO_MARK		2	/* Nanoseconds since the start. */
#define LJM_INFO_SNAPSHOT	3	/* A heap snapshot's id, nanoseconds. */
#define LJM_INFO_PROCESS	4	/* The writing process (process). */
#define LJM_INFO_LABELSET	5	/* A label set announced (v6). */
#define LJM_INFO_LABELS		6	/* A label set in force (v6). */
#define LJM_CONFIG_STACKS	1	/* Config flags: events have stacks, */
#define LJM_CONFIG_NATIVE	2	/* ... with their native frames. */
#define LJM_STACK_FULL		0	/* Stack id: the table had no room. */
#define LJM_STACK_DEPTH_MAX	256	/* Deeper is damage. */
#define LJM_LINE_UNKNOWN	0xffffffffu

#define LJM_EPILOGUE_HEADER	((uint8_t)0x80)

/* -- Heap snapshot ------------------------------------------------------- */

#define LJH_VERSION		1

#define LJH_CONFIG_STRINGS	1	/* Config flags: contents written. */

/* Object types: the low bits of an object's header. */
#define LJH_OBJ_STR		1
#define LJH_OBJ_UPVAL		2
#define LJH_OBJ_THREAD		3
#define LJH_OBJ_PROTO		4
#define LJH_OBJ_LFUNC		5
#define LJH_OBJ_CFUNC		6
#define LJH_OBJ_TRACE		7
#define LJH_OBJ_CDATA		8
#define LJH_OBJ_TAB		9
#define LJH_OBJ_UDATA		10
#define LJH_OBJ_MASK		0x0f
#define LJH_WEAKKEY		0x20	/* A table's flags in its header. */
#define LJH_WEAKVAL		0x40
#define LJH_CONTENT		0x20	/* A string's contents follow. */
#define LJH_NAME_MAX		256	/* Bytes of a name's contents. */

/* Other records. */
#define LJH_REC_ROOTS		0x10
#define LJH_REC_CTYPE		0x11
#define LJH_REC_INFO		0x12
#define LJH_REC_NAME		0x13
#define LJH_REC_MEMPROF		0x14	/* The mark a memprof stream got. */
#define LJH_END			((uint8_t)0x80)

/* Edge kinds. */
#define LJH_E_END		0
#define LJH_E_ARRAY		1
#define LJH_E_HSTR		2
#define LJH_E_HINT		3
#define LJH_E_HNUM		4
#define LJH_E_HBOOL		5
#define LJH_E_HLIGHT		6
#define LJH_E_HOBJ		7
#define LJH_E_META		8
#define LJH_E_ENV		9
#define LJH_E_UPVAL		10
#define LJH_E_VALUE		11
#define LJH_E_PROTO		12
#define LJH_E_KGC		13
#define LJH_E_CHUNK		14
#define LJH_E_TRACE		15
#define LJH_E_FRAME		16
#define LJH_E_SLOT		17
#define LJH_E_ROOT		18
#define LJH_E__MAX		19

/* Targets. */
#define LJH_TARGET_NONE		0
#define LJH_TARGET_NEW		1
#define LJH_TARGET_ID		2	/* Plus the object's number. */

/* Roots: a ROOT edge's kind; arg numbers the roots of one kind. */
#define LJH_ROOT_GLOBALS	1
#define LJH_ROOT_REGISTRY	2
#define LJH_ROOT_MAINTHREAD	3
#define LJH_ROOT_CURTHREAD	4
#define LJH_ROOT_BASEMT		5	/* arg: the type's number. */
#define LJH_ROOT_MMNAME		6	/* arg: the metamethod's number. */
#define LJH_ROOT_IO		7	/* arg: 0 input, 1 output. */
#define LJH_ROOT_FINALIZE	8	/* Waiting for its finalizer. */
#define LJH_ROOT_CDATAFIN	9	/* The table of cdata finalizers. */
#define LJH_ROOT_CURTRACE	10	/* A constant of the trace recorded. */
#define LJH_ROOT__MAX		11

/* A thread's status. */
#define LJH_THREAD_RUNNING	0
#define LJH_THREAD_SUSPENDED	1
#define LJH_THREAD_NORMAL	2
#define LJH_THREAD_DEAD		3

/* -- Platform profiler --------------------------------------------------- */

/* 2 is the reference's; 3 ours; 4 labels. */
#define LJP_VERSION_REFERENCE	2
#define LJP_VERSION		3
#define LJP_VERSION_LABELS	4

/* Record types after the samples' VM states 0..9. */
#define REC_PROTO		10
#define REC_CSYM		11
#define REC_TRACE		12
#define REC_FFNAME		13
#define REC_CONFIG		14
#define REC_STATS		15
#define REC_TRACE_START		16	/* The trace compiler's events. */
#define REC_TRACE_END		17
#define REC_TRACE_ABORT		18
#define REC_BLACKLIST		19
#define REC_FLUSH		20
#define REC_EXITS		21
#define REC_JIT			22
#define REC_PROCESS		23	/* The writing process (process). */
#define REC_LABELSET		24	/* A label set announced (v4). */
#define REC_LABELS		25	/* A label set in force (v4). */
#define REC_LABELCOUNTS		26	/* Mode D's samples by set (v4). */
#define LJP_END			((uint8_t)0x80)

/* A sample's VM state: its first byte; the stats count samples by state,
** in this order. Each state's number (LJP_VMST_*) and name, said once. */
#define LJP_VMSTDEF(_) \
  _(INTERP) _(LFUNC) _(FFUNC) _(CFUNC) _(GC) _(EXIT) _(RECORD) _(OPT) \
  _(ASM) _(TRACE)

enum {
#define LJP_VMSTENUM(name)	LJP_VMST_##name,
LJP_VMSTDEF(LJP_VMSTENUM)
#undef LJP_VMSTENUM
  LJP_VMSTATES		/* States 0..9. */
};

/* A table of the states' names: { LJP_VMSTDEF(LJP_VMSTNAME) }. */
#define LJP_VMSTNAME(name)	#name,
#define LJP_SAMPLE_JIT		0x40	/* With a jit-context. */

/* How a trace starts; why the traces are flushed. */
#define LJP_TRACE_ROOT		0
#define LJP_TRACE_SIDE		1	/* Of trace `from`, at its exit. */
#define LJP_TRACE_STITCH	2	/* Stitched to trace `from`. */
#define LJP_FLUSH_ASKED		0	/* By the program (jit.flush(), ...). */
#define LJP_FLUSH_MAXTRACE	1	/* No trace number left (maxtrace). */
#define LJP_FLUSH_MAXMCODE	2	/* No machine code left (maxmcode). */

/* Frame tags of a sample. */
#define LJP_FRAME_LUA		1	/* Proto address, line. */
#define LJP_FRAME_CFUNC		2	/* C function address. */
#define LJP_FRAME_FFUNC		3	/* Fast function id. */
#define LJP_FRAME_NATIVE	4	/* Code address. */
#define LJP_FRAME_TRACE		5	/* Trace, start proto, start line. */
#define LJP_FRAME_TRACE_LUA	6	/* The same, and its Lua frames. */
#define LJP_LINE_UNKNOWN	0xffffffffu	/* No PC of the frame known. */

/* The config record's modes and clocks. */
#define LJP_MODE_DEFAULT	0	/* D: counts by VM state only. */
#define LJP_MODE_LEAF		1	/* L: the innermost frames. */
#define LJP_MODE_CALLGRAPH	2	/* C: the whole stack. */
#define LJP_CLOCK_CPU		0	/* Thread CPU time, a POSIX timer. */
#define LJP_CLOCK_WALL		1	/* Monotonic time. */
#define LJP_CLOCK_PERF		2	/* Thread CPU time, a perf event. */

#endif
