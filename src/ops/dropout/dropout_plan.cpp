#include "ops/dropout/dropout_plan.h"

namespace gradkit::ops {

DropoutPlan planDropout(const DropoutArgs& args) {
  const double p = args.p;
  DropoutPlan plan;
  plan.generateMask = args.train && p != 0.0 && p != 1.0;  // upstream compares exactly here
  if (plan.generateMask) {
    plan.mask = planGenMask(planDropoutMask(args.input->numel(), p, args.seed, args.offset, /*epsilonFills=*/false),
                            *args.maskOut);
    plan.maskRegion = plan.workspace.bookNested("mask", plan.mask.workspace);
  }
  // Eval is DoMask's copy (p = 0: the mask is not read); p == 1 its zeros.
  plan.output = planDoMask({args.input, args.maskOut, args.train ? p : 0.0, args.out});
  plan.outputRegion = plan.workspace.bookNested("output", plan.output.workspace);
  return plan;
}

aclnnStatus DropoutPlan::run(void* memory) const {
  if (generateMask) {
    const aclnnStatus status = mask.run(maskRegion.in(memory));
    if (status != ACLNN_SUCCESS) return status;
  }
  return output.run(outputRegion.in(memory));
}

const OpDefinition<DropoutArgs, DropoutPlan> kDropout{
    kDropoutApi, checkDropout, [](const DropoutArgs& args) { return args.input->isEmpty(); }, planDropout};

}  // namespace gradkit::ops
