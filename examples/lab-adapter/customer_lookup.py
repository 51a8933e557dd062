from agent_fault_lab.adapters import AgentContext, AgentResult


async def run(context: AgentContext) -> AgentResult:
    observation = await context.call_tool(
        "get_customer", {"customer_id": context.task["customer_id"]}
    )
    # Feed the observation into your own reasoning loop and route further tool calls.
    return AgentResult(output=f"Customer lookup succeeded: {observation.ok}")
