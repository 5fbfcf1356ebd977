using System.Runtime.CompilerServices;

// The test program checks struct layouts, status mapping through misuse of raw calls, and
// the number of live callback handles.
[assembly: InternalsVisibleTo("Ctxpack.Tests")]
