// Nullable reference annotations in a form Mono's mcs (C# 7.0, no `string?` syntax) can
// compile: the attributes of System.Diagnostics.CodeAnalysis on the members that take or
// return null. A nullable-aware build (.NET 8, annotations context) reads them as
// `string?` in and out ([AllowNull] on what accepts null, [MaybeNull] on what may return
// it); the other references of the API are not null. netstandard2.0 lacks the attributes,
// so they are declared here for that target; the compiler recognises them by name.
#if !NETCOREAPP3_0_OR_GREATER && !NETSTANDARD2_1_OR_GREATER
namespace System.Diagnostics.CodeAnalysis
{
    /// Null is allowed as an input even if the type disallows it.
    [AttributeUsage(AttributeTargets.Field | AttributeTargets.Parameter | AttributeTargets.Property, Inherited = false)]
    internal sealed class AllowNullAttribute : Attribute { }

    /// An output may be null even if the type disallows it.
    [AttributeUsage(AttributeTargets.Field | AttributeTargets.Parameter | AttributeTargets.Property | AttributeTargets.ReturnValue,
        Inherited = false)]
    internal sealed class MaybeNullAttribute : Attribute { }

    /// An out parameter may be null when the method returns ReturnValue.
    [AttributeUsage(AttributeTargets.Parameter, Inherited = false)]
    internal sealed class MaybeNullWhenAttribute : Attribute
    {
        public MaybeNullWhenAttribute(bool returnValue) { ReturnValue = returnValue; }
        public bool ReturnValue { get; }
    }
}
#endif
