namespace HybridKV.Operations;

/// <summary>Retrying a parked operation from the start of its algorithm, as CompletePending does.</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>Runs one more attempt of a pending operation, retrying lost CAS races at once.</summary>
    public OperationStatus ContinuePending(PendingOperation<TKey, TInput, TOutput, TContext> operation, int epochEntry)
    {
        OperationStatus status;
        do
        {
            status = operation.Kind switch
            {
                PendingKind.RMW => InternalRMW(in operation.Key, in operation.Input, epochEntry),
                _ => InternalRead(in operation.Key, in operation.Input, ref operation.Output),
            };
        }
        while (status == OperationStatus.RetryNow);

        return status;
    }

    /// <summary>Hands a finished pending operation to its completion callback.</summary>
    public void ReportCompletion(PendingOperation<TKey, TInput, TOutput, TContext> operation, Status status)
    {
        if (operation.Kind == PendingKind.RMW)
        {
            _functions.RMWCompletionCallback(in operation.Key, in operation.Input, operation.Context, status);
        }
        else
        {
            _functions.ReadCompletionCallback(
                in operation.Key, in operation.Input, in operation.Output, operation.Context, status);
        }
    }
}
