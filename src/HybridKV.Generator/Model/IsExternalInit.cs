namespace System.Runtime.CompilerServices;

// netstandard2.0 lacks the marker type the compiler needs for records and init accessors.
internal static class IsExternalInit
{
}
