/*
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
** stream          := symtab (memprof | sysprof)
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
** -- Memory profiler: 'ljm' v3 (the reference's), v4 and v5 --
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
** loc-int         :=
** loc-lua         := proto-addr line-no
** loc-cfunc       := code-addr
** loc-trace       := trace-no
** loc-line        := line-id                                     (v4)
** update          := sym-lfunc | sym-cfunc | sym-trace
**                  | trace-line                                  (v4)
**                  | stack | info                                (v5)
** trace-line      := line-id trace-no proto-addr line-no
** stack           := stack-id depth frame{depth}
** frame           := 0x01 proto-addr line-no | 0x02 code-addr
**                  | 0x03 | 0x04 code-addr
** info            := 0x00 config-flags sample-bytes
**                  | 0x01 nstacks nfull ntruncated nsampled nuntracked
**                  | 0x02 nanoseconds
** stack-id, line-id, depth, weight, naddr, nsize, oaddr, osize,
** config-flags, sample-bytes, nstacks, nfull, ntruncated, nsampled,
** nuntracked, nanoseconds := <ULEB128>
**
** ev-header: [F UU SSS EE]
**   EE     the event (AEVENT_*): symtab update, alloc, free, realloc
**   SSS    an event's source (ASOURCE_*), which picks its loc: the VM
**          itself, a Lua line, a C function, a trace, a trace's line (v4);
**          an update's kind: a Lua function, C symbol or trace (as in the
**          symtab), a trace's line (v4), a stack or an info record (v5)
**   UU     0 before v5; AFLAG_STACK: a stack id follows the location
**          (alloc, realloc), AFLAG_WEIGHT: a weight the payload (alloc);
**          0 on updates
**   F      1 in ev-end only (LJM_EPILOGUE_HEADER)
**
** Trace lines and stacks are numbered in the order they are announced,
** each before the first event that names it: lines from 0, stacks from 1
** (stack 0, LJM_STACK_FULL, is never announced). A stack has 1 to
** LJM_STACK_DEPTH_MAX frames, innermost first: LJM_FRAME_*, the marker
** LJM_FRAME_TRUNC last only; a Lua frame's line is LJM_LINE_UNKNOWN when
** none is known. Info records: LJM_INFO_*; config flags: LJM_CONFIG_*.
**
** -- Platform profiler: 'ljp' v3 (ours) and v2 (the reference's) --
**
** sysprof         := 'l' 'j' 'p' version reserved record* sp-end
** sp-end          := 0x80
**
** v3:
** record          := sample | sp-update | ffname | config | stats
**                  | jit-event
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
** stats           := 0x0f nsamples count{10} ndropped noverruns elapsed
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
** noverruns, elapsed, jit-on, kind, from, exit-no, link-type, link, nins,
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
** number may be given again (any trace-start) and at the end. Records: REC_*; the config's mode (LJP_MODE_*),
** interval (microseconds) and clock (LJP_CLOCK_*); the stats' counts by
** VM state.
*/

/* -- Symbol table -------------------------------------------------------- */

#define LJS_VERSION		3

/* The low bits of an entry's header byte: its type; or the end. */
#define SYMTAB_LFUNC		((uint8_t)0)
#define SYMTAB_CFUNC		((uint8_t)1)
#define SYMTAB_TRACE		((uint8_t)2)
#define SYMTAB_TYPE_MASK	((uint8_t)3)
#define SYMTAB_FINAL		((uint8_t)0x80)

/* -- Memory profiler ----------------------------------------------------- */

/* 3 is the reference's; 4 adds ASOURCE_TRACE_LUA; 5 adds call stacks and
** sampled events. */
#define LJM_VERSION_REFERENCE	3
#define LJM_VERSION		4
#define LJM_VERSION_STACKS	5

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
#define ASOURCE_MASK		((uint8_t)(7 << 2))

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
#define LJM_CONFIG_STACKS	1	/* Config flags: events have stacks, */
#define LJM_CONFIG_NATIVE	2	/* ... with their native frames. */
#define LJM_STACK_FULL		0	/* Stack id: the table had no room. */
#define LJM_STACK_DEPTH_MAX	256	/* Deeper is damage. */
#define LJM_LINE_UNKNOWN	0xffffffffu

#define LJM_EPILOGUE_HEADER	((uint8_t)0x80)

/* -- Platform profiler --------------------------------------------------- */

/* 2 is the reference's, 3 ours. */
#define LJP_VERSION_REFERENCE	2
#define LJP_VERSION		3

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
#define LJP_END			((uint8_t)0x80)

/* A sample's VM state: its first byte; the stats count samples by state,
** in this order. */
#define LJP_VMST_INTERP		0
#define LJP_VMST_LFUNC		1
#define LJP_VMST_FFUNC		2
#define LJP_VMST_CFUNC		3
#define LJP_VMST_GC		4
#define LJP_VMST_EXIT		5
#define LJP_VMST_RECORD		6
#define LJP_VMST_OPT		7
#define LJP_VMST_ASM		8
#define LJP_VMST_TRACE		9
#define LJP_VMSTATES		10	/* States 0..9. */
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
